SELECT id, amount FROM bench ORDER BY amount, id LIMIT 10 OFFSET 1000
