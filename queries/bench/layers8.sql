SELECT category, sum(amount) AS total, count(*) AS n FROM bench GROUP BY category
