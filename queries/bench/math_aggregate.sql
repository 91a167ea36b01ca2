SELECT category, sum(sqrt(amount)) AS s, sum(CAST(floor(amount / 3.0) AS BIGINT)) AS f FROM bench GROUP BY category
