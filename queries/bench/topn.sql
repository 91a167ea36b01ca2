SELECT hash, id, amount FROM bench ORDER BY hash, id LIMIT 10
