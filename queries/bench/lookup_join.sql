SELECT tier, sum(amount * weight) AS weighted, count(*) AS n FROM bench JOIN categories USING (category) GROUP BY tier
