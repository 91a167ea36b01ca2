//! The text YSON writer: compact canonical text that the parser reads back to the same value.

use super::Yson;

pub(super) fn write_node(out: &mut String, v: &Yson) {
    match v {
        Yson::Entity => out.push('#'),
        Yson::Boolean(true) => out.push_str("%true"),
        Yson::Boolean(false) => out.push_str("%false"),
        Yson::Int64(i) => out.push_str(&i.to_string()),
        Yson::Uint64(u) => {
            out.push_str(&u.to_string());
            out.push('u');
        }
        Yson::Double(d) => write_double(out, *d),
        Yson::String(s) => write_string(out, s),
        Yson::List(items) => {
            out.push('[');
            for item in items {
                write_node(out, item);
                out.push(';');
            }
            out.push(']');
        }
        Yson::Map(entries) => {
            out.push('{');
            write_entries(out, entries);
            out.push('}');
        }
        Yson::Attributed { attributes, value } => {
            if !attributes.is_empty() {
                out.push('<');
                write_entries(out, attributes);
                out.push('>');
            }
            write_node(out, value);
        }
    }
}

fn write_entries(out: &mut String, entries: &[(Vec<u8>, Yson)]) {
    for (k, v) in entries {
        write_string(out, k);
        out.push('=');
        write_node(out, v);
        out.push(';');
    }
}

/// Shortest text that re-parses to the same bits (Rust's `{:?}` is shortest-round-trip), in
/// YSON spelling: a double must contain `.` or an exponent to not read back as an integer, and
/// YT writes integral doubles as `1.` rather than `1.0`.
fn write_double(out: &mut String, d: f64) {
    if d.is_nan() {
        out.push_str("%nan");
    } else if d.is_infinite() {
        out.push_str(if d > 0.0 { "%inf" } else { "%-inf" });
    } else {
        let s = format!("{d:?}");
        match s.strip_suffix(".0") {
            Some(int_part) => {
                out.push_str(int_part);
                out.push('.');
            }
            None => out.push_str(&s),
        }
    }
}

fn write_string(out: &mut String, s: &[u8]) {
    out.push('"');
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(b as char),
            // Always two hex digits: the reader takes up to two, so a following hex-digit
            // character can never be swallowed into the escape.
            _ => out.push_str(&format!("\\x{b:02X}")),
        }
    }
    out.push('"');
}
