SELECT count(*) AS n FROM bench WHERE abs(CAST(trunc(amount) AS BIGINT) - 100) < 10 AND coalesce(isnan(amount), false) = false
