SELECT count(*) AS n FROM bench WHERE starts_with(category, 'del')
