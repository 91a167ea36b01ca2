SELECT category, max(regexp_replace(payload, '[aeiou]', '_', 'g')) AS m FROM bench GROUP BY category
