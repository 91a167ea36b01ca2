//! Rich YPath, as `write-table` and `read-table` take it: a path with attributes before it
//! (`<append=%true>//t`), a column selector (`//t{a,b}`) and a row index range after it
//! (`//t[#10:#20]`, `//t[#5]`, `//t[:#3]`).

use dynql_core::Yson;

use crate::error::{Error, Result};

/// A parsed rich path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RichPath {
    /// The plain path.
    pub path: String,
    /// `<append=%true>`: add rows after the table's rows instead of replacing them.
    pub append: bool,
    /// `{a,b}`: the columns to read, in this order.
    pub columns: Option<Vec<String>>,
    /// `[#a:#b]`: the first row index read, and the one after the last.
    pub lower_row_index: Option<u64>,
    pub upper_row_index: Option<u64>,
}

impl RichPath {
    /// Parses `text`.
    ///
    /// ```
    /// use dynql::RichPath;
    /// let p = RichPath::parse("<append=%true>//tmp/t{a,b}[#2:#5]").unwrap();
    /// assert_eq!(p.path, "//tmp/t");
    /// assert!(p.append);
    /// assert_eq!(p.columns, Some(vec!["a".to_string(), "b".to_string()]));
    /// assert_eq!((p.lower_row_index, p.upper_row_index), (Some(2), Some(5)));
    /// ```
    ///
    /// # Errors
    /// Unbalanced brackets, an attribute other than `append`, a key range (dynql reads row
    /// index ranges only), several ranges.
    pub fn parse(text: &str) -> Result<RichPath> {
        let bad = |why: &str| Error::Invalid(format!("Invalid YPath {text:?}: {why}"));
        let mut out = RichPath::default();
        let mut rest = text.trim();
        if rest.starts_with('<') {
            let end = closing(rest, '<', '>').ok_or_else(|| bad("unbalanced \"<\""))?;
            let attributes = dynql_core::yson::parse(format!("{{{}}}", &rest[1..end]).as_bytes())
                .map_err(|e| bad(&format!("attributes: {e}")))?;
            out.append = read_attributes(&attributes).map_err(|e| bad(&e))?;
            rest = rest[end + 1..].trim_start();
        }
        let cut = rest.find(['{', '[']).unwrap_or(rest.len());
        out.path = rest[..cut].trim_end().to_string();
        let mut rest = &rest[cut..];
        if rest.starts_with('{') {
            let end = closing(rest, '{', '}').ok_or_else(|| bad("unbalanced \"{\""))?;
            out.columns = Some(
                rest[1..end]
                    .split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
            rest = &rest[end + 1..];
        }
        if rest.starts_with('[') {
            let end = closing(rest, '[', ']').ok_or_else(|| bad("unbalanced \"[\""))?;
            let (lower, upper) = row_range(&rest[1..end]).map_err(|e| bad(&e))?;
            (out.lower_row_index, out.upper_row_index) = (lower, upper);
            rest = &rest[end + 1..];
        }
        if !rest.trim().is_empty() {
            return Err(bad(&format!("unexpected {:?} after the path", rest.trim())));
        }
        Ok(out)
    }
}

/// The index of the bracket that closes the one `text` starts with.
fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            _ if quoted => {}
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `append` attribute; any other is refused.
fn read_attributes(attributes: &Yson) -> std::result::Result<bool, String> {
    let Yson::Map(entries) = attributes else {
        return Err("attributes must be a map".into());
    };
    let mut append = false;
    for (name, value) in entries {
        match (name.as_slice(), value) {
            (b"append", Yson::Boolean(b)) => append = *b,
            (b"append", _) => return Err("append must be %true or %false".into()),
            (other, _) => {
                return Err(format!(
                    "attribute {:?} is not supported (dynql supports append)",
                    String::from_utf8_lossy(other)
                ))
            }
        }
    }
    Ok(append)
}

/// `#a:#b`, `#a:`, `:#b`, `#a` (one row).
fn row_range(text: &str) -> std::result::Result<(Option<u64>, Option<u64>), String> {
    let index = |t: &str| -> std::result::Result<Option<u64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        let Some(n) = t.strip_prefix('#') else {
            return Err(format!(
                "{t:?} is a key bound; dynql reads row index ranges only (#N)"
            ));
        };
        n.trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{t:?} is not a row index"))
    };
    if text.contains(',') {
        return Err("dynql reads one range at a time".into());
    }
    match text.split_once(':') {
        Some((lower, upper)) => Ok((index(lower)?, index(upper)?)),
        None => {
            let row = index(text)?.ok_or("an empty range")?;
            Ok((Some(row), Some(row + 1)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_and_every_suffix_parse() {
        assert_eq!(
            RichPath::parse("//t").unwrap(),
            RichPath {
                path: "//t".into(),
                ..RichPath::default()
            }
        );
        let p = RichPath::parse("//t[#3]").unwrap();
        assert_eq!((p.lower_row_index, p.upper_row_index), (Some(3), Some(4)));
        let p = RichPath::parse("//t[:#3]").unwrap();
        assert_eq!((p.lower_row_index, p.upper_row_index), (None, Some(3)));
        let p = RichPath::parse("<append=%false>//t{ b , a }").unwrap();
        assert!(!p.append);
        assert_eq!(p.columns, Some(vec!["b".into(), "a".into()]));
        assert_eq!(RichPath::parse("#1-2-3-4").unwrap().path, "#1-2-3-4");
    }

    #[test]
    fn what_dynql_does_not_read_is_refused_with_the_reason() {
        for (text, why) in [
            ("//t[(1):(2)]", "key bound"),
            ("//t[#1:#2,#5:#6]", "one range"),
            ("<sorted_by=[a]>//t", "not supported"),
            ("<append=1>//t", "%true or %false"),
            ("//t[#1", "unbalanced"),
            ("//t{a}x", "unexpected"),
        ] {
            let e = RichPath::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
