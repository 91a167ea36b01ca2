//! Cypress commands: starting transactions of either kind, `get` of nodes, attributes and
//! objects (`#ID`), and `list` with attributes or in long format.

use anyhow::{bail, Context, Result};
use dynql::{Database, Yson};

/// `start-tx`: a master transaction (the default, as in YT) or a tablet one; returns its id.
pub async fn start_tx(
    db: &Database,
    timeout: u64,
    tx_type: &str,
    parent: Option<String>,
    title: Option<String>,
    attributes: Option<String>,
) -> Result<String> {
    if tx_type == "tablet" {
        if parent.is_some() || title.is_some() || attributes.is_some() {
            bail!("--tx, --title and --attributes are for master transactions; a tablet transaction takes --timeout only");
        }
        return Ok(db
            .start_transaction_with_timeout(timeout)
            .await?
            .id()
            .to_string());
    }
    let mut title = title;
    if let Some(text) = attributes {
        let map =
            dynql::parse_document(&text).context("--attributes must be a YSON or JSON map")?;
        if let Some(t) = map.get("title") {
            title = Some(t.as_str().context("title must be a string")?.to_string());
        }
    }
    let options = dynql::MasterTransactionOptions {
        parent,
        timeout_ms: timeout,
        title,
    };
    Ok(db.start_master_transaction(options).await?)
}

/// `get PATH`, `get PATH/@NAME`, `get '#ID…'`, as `tx` (a master transaction) sees them.
pub async fn get(
    db: &Database,
    path: &str,
    attributes: &[String],
    tx: Option<&str>,
) -> Result<Yson> {
    Ok(match path.split_once("/@") {
        _ if path.starts_with('#') => db.get_object(path, tx).await?,
        Some((node, attribute)) => {
            let name = (!attribute.is_empty()).then_some(attribute);
            db.get_attribute_in(node, name, tx).await?
        }
        None => node(db, path, attributes, tx).await?,
    })
}

/// A node as `yt get PATH` prints it (see [`Database::get`]), carrying the attributes
/// asked for with `--attribute`.
async fn node(db: &Database, path: &str, attributes: &[String], tx: Option<&str>) -> Result<Yson> {
    let value = db.get_in(path, tx).await?;
    if attributes.is_empty() {
        return Ok(value);
    }
    with_attributes(db, path, value, attributes, tx).await
}

/// `list PATH` with `--format`: the children's names as a list, each carrying the
/// attributes asked for with `--attribute`.
pub async fn list(
    db: &Database,
    path: &str,
    attributes: &[String],
    tx: Option<&str>,
) -> Result<Yson> {
    let names = db.list_in(path, tx).await?;
    let mut items = Vec::with_capacity(names.len());
    for name in names {
        let child = child_path(path, &name);
        let value = Yson::String(name.into_bytes());
        items.push(with_attributes(db, &child, value, attributes, tx).await?);
    }
    Ok(Yson::List(items))
}

/// `value` carrying the attributes `attributes` of the node at `path` has.
async fn with_attributes(
    db: &Database,
    path: &str,
    value: Yson,
    attributes: &[String],
    tx: Option<&str>,
) -> Result<Yson> {
    let mut asked = Vec::with_capacity(attributes.len());
    for name in attributes {
        // YT leaves out the attributes a node does not have.
        match db.get_attribute_in(path, Some(name), tx).await {
            Ok(v) => asked.push((name.as_bytes().to_vec(), v)),
            Err(dynql::Error::NoSuchAttribute(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(match asked.is_empty() {
        true => value,
        false => Yson::Attributed {
            attributes: asked,
            value: Box::new(value),
        },
    })
}

/// The path of the child `name` of the directory at `path` (`/` is the top: `//name`).
fn child_path(path: &str, name: &str) -> String {
    match path.trim_end_matches('/') {
        "" => format!("//{name}"),
        parent => format!("{parent}/{name}"),
    }
}

/// A child as `list -l` prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct LongEntry {
    /// The node's type (`table`, `map_node`, `document`, …).
    pub node_type: String,
    /// The account charged for the node; dynql has no accounts, so only an `account`
    /// attribute set on the node gives one.
    pub account: Option<String>,
    /// Bytes on disk: `resource_usage/disk_space` where the node has it, else a table's
    /// chunks (the sum of its tablets' compressed_data_size), else 0.
    pub disk_space: u64,
    /// `modification_time`, else `creation_time` (ISO 8601), if the node has either.
    pub time: Option<String>,
    /// The child's name.
    pub name: String,
    /// A link's target.
    pub target_path: Option<String>,
}

impl LongEntry {
    /// The line yt prints: type, account, size, date and time (`%10s %20s %10s %10s %5s`),
    /// the name, and ` -> TARGET` for a link. What dynql does not know is `-`.
    pub fn line(&self) -> String {
        let (date, time) = match self.time.as_deref().and_then(|t| t.split_once('T')) {
            Some((date, time)) => (date, time.get(..5).unwrap_or(time)),
            None => ("-", "-"),
        };
        let link = match &self.target_path {
            Some(target) => format!(" -> {target}"),
            None => String::new(),
        };
        format!(
            "{:>10} {:>20} {:>10} {:>10} {:>5} {}{link}",
            self.node_type,
            self.account.as_deref().unwrap_or("-"),
            format_disk_space(self.disk_space),
            date,
            time,
            self.name,
        )
    }
}

/// A size as yt prints it in `list -l`: one decimal and a binary unit (`0.0B`, `1.5KiB`).
pub fn format_disk_space(bytes: u64) -> String {
    let mut size = bytes as f64;
    for unit in ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"] {
        if size.abs() < 1024.0 {
            return format!("{size:.1}{unit}B");
        }
        size /= 1024.0;
    }
    format!("{size:.1}YiB")
}

/// `list -l PATH`: each child with the attributes yt's long format shows (type, account,
/// resource_usage, modification_time, target_path), as far as dynql has them.
pub async fn list_long(db: &Database, path: &str, tx: Option<&str>) -> Result<Vec<LongEntry>> {
    let names = db.list_in(path, tx).await?;
    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        let child = child_path(path, &name);
        let attributes = db
            .get_attribute_in(&child, None, tx)
            .await
            .with_context(|| format!("reading the attributes of {child}"))?;
        entries.push(long_entry(name, &attributes));
    }
    Ok(entries)
}

/// The long-format entry of the child `name` whose attributes (`get PATH/@`) are
/// `attributes`.
fn long_entry(name: String, attributes: &Yson) -> LongEntry {
    let text = |key: &str| {
        attributes
            .get(key)
            .and_then(Yson::as_str)
            .map(str::to_string)
    };
    let number = |v: &Yson| match v {
        Yson::Int64(n) => u64::try_from(*n).ok(),
        Yson::Uint64(n) => Some(*n),
        _ => None,
    };
    let tablets_bytes = || match attributes.get("tablets") {
        Some(Yson::List(tablets)) => tablets
            .iter()
            .filter_map(|t| t.get("compressed_data_size").and_then(number))
            .sum(),
        _ => 0,
    };
    let disk_space = attributes
        .get("resource_usage")
        .and_then(|usage| usage.get("disk_space"))
        .and_then(number)
        .unwrap_or_else(tablets_bytes);
    let node_type = text("type").unwrap_or_else(|| "-".into());
    LongEntry {
        target_path: (node_type == "link").then(|| text("target_path")).flatten(),
        node_type,
        account: text("account"),
        disk_space,
        time: text("modification_time").or_else(|| text("creation_time")),
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_have_the_widths_yt_prints() {
        let attributes = dynql::yson::parse(
            br#"{"type"="map_node";"creation_time"="2026-11-27T13:47:04.366000Z";}"#,
        )
        .unwrap();
        let entry = long_entry("home".into(), &attributes);
        assert_eq!(
            entry.line(),
            "  map_node                    -       0.0B 2026-11-27 13:47 home"
        );
        let table = dynql::yson::parse(
            br#"{"type"="table";"account"="dev";"tablets"=[{"compressed_data_size"=1024;};{"compressed_data_size"=512;};];}"#,
        )
        .unwrap();
        assert_eq!(
            long_entry("t".into(), &table).line(),
            "     table                  dev     1.5KiB          -     - t"
        );
        assert_eq!(format_disk_space(0), "0.0B");
        assert_eq!(format_disk_space(3 << 20), "3.0MiB");
        assert_eq!(child_path("/", "home"), "//home");
        assert_eq!(child_path("//home/", "t"), "//home/t");
    }
}
