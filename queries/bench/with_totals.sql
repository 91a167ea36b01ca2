SELECT category, sum(amount) AS total, count(*) AS n FROM bench GROUP BY category UNION ALL SELECT CAST(NULL AS VARCHAR), sum(amount), count(*) FROM bench
