SELECT category, max(length(concat(lower(payload), category))) AS m FROM bench GROUP BY category
