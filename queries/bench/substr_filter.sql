SELECT count(*) AS n FROM bench WHERE strpos(payload, 'ta') > 0
