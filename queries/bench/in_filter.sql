SELECT count(*) AS n FROM bench WHERE category IN ('alpha', 'gamma', 'pi') AND id % 10 IN (1, 3, 7)
