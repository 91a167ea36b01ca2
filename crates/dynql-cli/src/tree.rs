//! Cypress commands: starting transactions of either kind, and `get` of nodes, attributes
//! and objects (`#ID`).

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
        let child = format!("{}/{name}", path.trim_end_matches('/'));
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
