SELECT count(*) AS n FROM bench WHERE strpos(payload, '77') > 0
