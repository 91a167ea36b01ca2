SELECT count(*) AS n FROM bench WHERE id % 7 = 3
