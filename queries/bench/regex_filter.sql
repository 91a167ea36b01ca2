SELECT count(*) AS n FROM bench WHERE regexp_replace(payload, '7[0-9]7$', '') <> payload
