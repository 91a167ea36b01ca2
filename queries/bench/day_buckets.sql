SELECT id * 600 - (id * 600) % 86400 AS d, sum(amount) AS s FROM bench GROUP BY d ORDER BY d LIMIT 10
