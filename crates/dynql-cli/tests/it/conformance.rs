//! The public YT QL conformance cases (`testdata/conformance/*.jsonl`), run through the CLI
//! exactly as `shared/conformance/ytql.py` runs them.

use serde_json::{json, Value};

use crate::TestStore;

fn norm(v: &Value) -> Value {
    match v {
        Value::String(s)
            if s.len() > 1
                && s.ends_with('u')
                && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit()) =>
        {
            s[..s.len() - 1]
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or_else(|_| v.clone())
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), norm(x))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        other => other.clone(),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
                return i == j;
            }
            if let (Some(i), Some(j)) = (x.as_u64(), y.as_u64()) {
                return i == j;
            }
            let (f, g) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            f == g || (f - g).abs() <= 1e-9 * 1f64.max(f.abs()).max(g.abs())
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

fn rows_match(want: &[Value], got: &[Value], ordered: bool) -> bool {
    if want.len() != got.len() {
        return false;
    }
    if ordered {
        return want.iter().zip(got).all(|(w, g)| same(w, g));
    }
    let mut left: Vec<&Value> = got.iter().collect();
    for w in want {
        match left.iter().position(|g| same(w, g)) {
            Some(i) => {
                left.remove(i);
            }
            None => return false,
        }
    }
    true
}

/// Moves a totals row (null group key, first or last) to the end.
fn totals_last(rows: &[Value]) -> Vec<Value> {
    let n = rows.len();
    for (i, r) in rows.iter().enumerate() {
        let has_null = r
            .as_object()
            .is_some_and(|m| m.values().any(Value::is_null));
        if (i == 0 || i + 1 == n) && has_null {
            let mut out: Vec<Value> = rows
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| r.clone())
                .collect();
            out.push(r.clone());
            return out;
        }
    }
    rows.to_vec()
}

fn option_flags(options: Option<&Value>) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(Value::Object(m)) = options {
        for (name, value) in m {
            let v = match value {
                Value::Bool(b) => b.to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            flags.push(format!("--{}={v}", name.replace('_', "-")));
        }
    }
    flags
}

fn run_case(case: &Value) -> Result<(), String> {
    let store = TestStore::new();
    for t in case["tables"].as_array().ok_or("no tables")? {
        let path = t["path"].as_str().ok_or("no path")?;
        let mut attrs = json!({"dynamic": true, "schema": t["schema"]});
        for k in ["tablet_count", "pivot_keys"] {
            if let Some(v) = t.get(k) {
                attrs[k] = v.clone();
            }
        }
        let out = store.run(
            &["create", "table", path, "--attributes", &attrs.to_string()],
            None,
        );
        if !out.status.success() {
            return Err(format!(
                "create {path}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if let Some(rows) = t["rows"].as_array().filter(|r| !r.is_empty()) {
            let body: String = rows.iter().map(|r| format!("{r}\n")).collect();
            let out = store.run(&["insert-rows", path, "--format", "json"], Some(&body));
            if !out.status.success() {
                return Err(format!(
                    "insert {path}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    let query = case["query"].as_str().ok_or("no query")?;
    let mut args = vec![
        "select-rows".to_string(),
        query.to_string(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(option_flags(case.get("options")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = store.run(&args, None);
    let expect = &case["expect"];
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(err) = expect.get("error").and_then(Value::as_str) {
        if out.status.success() {
            return Err(format!("expected error {err:?}, got success"));
        }
        if err != "*" && !stderr.to_lowercase().contains(&err.to_lowercase()) {
            return Err(format!("expected error containing {err:?}, got {stderr}"));
        }
        if out.status.code() != Some(1) {
            return Err(format!("expected exit status 1, got {:?}", out.status));
        }
        return Ok(());
    }
    if !out.status.success() {
        return Err(format!("query failed: {stderr}"));
    }
    let got: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .map(|v| norm(&v))
                .map_err(|e| format!("bad JSON line {l:?}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let want: Vec<Value> = expect["rows"]
        .as_array()
        .ok_or("no rows")?
        .iter()
        .map(norm)
        .collect();
    if let Some(columns) = expect.get("columns").and_then(Value::as_array) {
        if let Some(first) = got.first().and_then(Value::as_object) {
            let names: Vec<&str> = first.keys().map(String::as_str).collect();
            let want_names: Vec<&str> = columns.iter().filter_map(Value::as_str).collect();
            if names != want_names {
                return Err(format!(
                    "columns differ: want {want_names:?}, got {names:?}"
                ));
            }
        }
    }
    let ordered = expect
        .get("ordered")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut matched = rows_match(&want, &got, ordered);
    if !matched
        && ordered
        && expect
            .get("totals_row_anywhere")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    {
        matched = rows_match(&totals_last(&want), &totals_last(&got), true);
    }
    if !matched {
        return Err(format!("rows differ\n  want {want:?}\n  got  {got:?}"));
    }
    Ok(())
}

fn run_file(name: &str) {
    let path = format!(
        "{}/../../testdata/conformance/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("conformance cases");
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("case"))
        .collect();
    assert!(!cases.is_empty());
    let failures = crate::run_cases(&cases, 4, run_case);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn ytql_public_cases_pass() {
    run_file("ytql-public.jsonl");
}

#[test]
fn ordered_public_cases_pass() {
    run_file("ordered-public.jsonl");
}

#[test]
fn ytql_extra_cases_pass() {
    run_file("ytql-extra.jsonl");
}
