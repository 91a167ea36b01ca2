SELECT hash, sum(CASE WHEN amount > 100.0 THEN amount ELSE 0.0 END) AS s FROM bench WHERE category <> 'alpha' GROUP BY hash
