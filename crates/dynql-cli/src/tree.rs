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
    let mut asked = Vec::with_capacity(attributes.len());
    for name in attributes {
        // YT leaves out the attributes a node does not have.
        if let Ok(v) = db.get_attribute_in(path, Some(name), tx).await {
            asked.push((name.as_bytes().to_vec(), v));
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
