//! Placeholders (`{name}`): each is replaced by the tokens of its value's text before parsing,
//! as YT splices placeholder values into the query (reference §6).

use dynql_core::Yson;

use crate::error::{Error, Result};
use crate::lexer::{tokenize, Spanned, Token};

/// Replaces every placeholder token by the tokens of its value from `values` (a YSON map).
///
/// # Errors
/// `Placeholder was not found` for a name without a value; `Incorrect placeholder map` for
/// values that are maps or not a map at all.
pub fn expand_placeholders(tokens: Vec<Spanned>, values: Option<&Yson>) -> Result<Vec<Spanned>> {
    if !tokens
        .iter()
        .any(|t| matches!(t.token, Token::Placeholder(_)))
    {
        return Ok(tokens);
    }
    let map = match values {
        None => None,
        Some(Yson::Map(m)) => Some(m),
        Some(Yson::Attributed { value, .. }) => match value.as_ref() {
            Yson::Map(m) => Some(m),
            _ => {
                return Err(Error::invalid_query(
                    "Incorrect placeholder map: expected a map",
                ))
            }
        },
        Some(_) => {
            return Err(Error::invalid_query(
                "Incorrect placeholder map: expected a map",
            ))
        }
    };
    let mut out = Vec::with_capacity(tokens.len());
    for t in tokens {
        let Token::Placeholder(name) = &t.token else {
            out.push(t);
            continue;
        };
        let value = map
            .and_then(|m| m.iter().find(|(k, _)| k.as_slice() == name.as_bytes()))
            .map(|(_, v)| v)
            .ok_or_else(|| {
                Error::invalid(format!("Placeholder was not found: {{{name}}}"), t.span)
            })?;
        let text = placeholder_text(value)?;
        if text.is_empty() {
            return Err(Error::invalid(
                format!("Placeholder {{{name}}} has an empty value"),
                t.span,
            ));
        }
        let mut sub = tokenize(&text).map_err(|e| {
            Error::invalid(
                format!("Placeholder {{{name}}} value does not lex: {e}"),
                t.span,
            )
        })?;
        sub.pop(); // Eof
        for mut s in sub {
            if matches!(s.token, Token::Placeholder(_)) {
                return Err(Error::invalid(
                    format!("Placeholder {{{name}}} value contains a placeholder"),
                    t.span,
                ));
            }
            s.span = t.span;
            out.push(s);
        }
    }
    Ok(out)
}

fn placeholder_text(v: &Yson) -> Result<String> {
    Ok(match v {
        Yson::Entity => "null".into(),
        Yson::Boolean(b) => b.to_string(),
        Yson::Int64(i) => i.to_string(),
        Yson::Uint64(u) => format!("{u}u"),
        // YT prints doubles with %lf: six fractional digits.
        Yson::Double(d) => {
            if d.is_infinite() {
                if *d > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            } else {
                format!("{d:.6}")
            }
        }
        Yson::String(s) => format!("\"{}\"", crate::ast::escape_bytes(s)),
        Yson::List(items) => {
            let parts = items
                .iter()
                .map(placeholder_text)
                .collect::<Result<Vec<_>>>()?;
            format!("({})", parts.join(", "))
        }
        Yson::Map(_) | Yson::Attributed { .. } => {
            return Err(Error::invalid_query(
                "Incorrect placeholder map: values should be plain types or lists",
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(q: &str, values: &str) -> Result<String> {
        let v = dynql_core::yson::parse(values.as_bytes()).unwrap();
        let toks = expand_placeholders(tokenize(q)?, Some(&v))?;
        Ok(format!(
            "{:?}",
            toks.iter().map(|t| t.token.clone()).collect::<Vec<_>>()
        ))
    }

    #[test]
    fn splices_values_as_tokens() {
        let got = expand(
            "b = {first} and (c, d) > {second}",
            "{first=1; second=[2; \"b\"]}",
        )
        .unwrap();
        let want = format!(
            "{:?}",
            tokenize("b = 1 and (c, d) > (2, \"b\")")
                .unwrap()
                .into_iter()
                .map(|t| t.token)
                .collect::<Vec<_>>()
        );
        assert_eq!(got, want);
    }

    #[test]
    fn rejects_maps_and_missing_names() {
        assert!(expand("a = {a}", "{a={b=42}}")
            .unwrap_err()
            .to_string()
            .contains("values should be plain types or lists"));
        assert!(expand("a = {x}", "{a=1}")
            .unwrap_err()
            .to_string()
            .contains("Placeholder was not found"));
    }
}
