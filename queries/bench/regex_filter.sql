SELECT count(*) AS n FROM bench WHERE regexp_like(payload, '7[0-9]7$')
