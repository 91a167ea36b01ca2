SELECT category, sum(amount) AS s FROM bench WHERE amount > 125.0 GROUP BY category
