//! Typed access to result rows: [`Row::get`] reads one value as a Rust type ([`FromValue`]),
//! [`Row::deserialize`] and [`SelectResult::deserialize`] read whole rows into a struct (or
//! tuple) with serde.

mod de;
mod from_value;

pub use from_value::{FromValue, FromValueError};

use dynql_core::{Value, ValueType};
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::results::{LookupResult, SelectResult};

/// One row of a [`SelectResult`] or [`LookupResult`], with the result's column names, for
/// reading its values as Rust types.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql::{Database, SelectOptions};
/// let db = Database::open("memory://")?;
/// db.create_table_from_text(
///     "//t",
///     "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=name;type=string}]}",
/// )
/// .await?;
/// db.insert_json_rows("//t", &[serde_json::json!({"id": 1, "name": "one"})]).await?;
/// let result = db.select_rows("id, name from [//t]", &SelectOptions::default()).await?;
/// for row in result.iter() {
///     let id: i64 = row.get("id")?;
///     let name = row.get::<String>("name")?;
///     assert_eq!((id, name.as_str()), (1, "one"));
/// }
/// // A wrong type or an unknown column is an error that names the column.
/// let row = result.row(0).unwrap();
/// assert_eq!(
///     row.get::<bool>("id").unwrap_err().to_string(),
///     "Column \"id\": cannot read int64 value 1 as bool"
/// );
/// assert!(row.get::<i64>("nope").is_err());
/// # Ok::<(), dynql::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    columns: &'a [(String, ValueType)],
    values: &'a [Value],
}

impl<'a> Row<'a> {
    /// A row of `values` under `columns` (the two in the same order).
    pub fn new(columns: &'a [(String, ValueType)], values: &'a [Value]) -> Row<'a> {
        Row { columns, values }
    }

    /// The value of a column (by name or by position from 0) as `T`; see [`FromValue`] for
    /// which Rust types each YT type reads as.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for an unknown name (or a position past the end),
    /// [`Error::RowValue`] when the value is not a `T` (a null needs an `Option`).
    pub fn get<T: FromValue>(&self, column: impl RowIndex) -> Result<T> {
        let i = column.index(self)?;
        T::from_value(&self.values[i]).map_err(|e| Error::RowValue {
            row: None,
            column: Some(self.columns[i].0.clone()),
            message: e.message().to_string(),
        })
    }

    /// The value of a column as it is, `None` for an unknown column.
    pub fn value(&self, name: &str) -> Option<&'a Value> {
        let i = self.columns.iter().position(|(n, _)| n == name)?;
        self.values.get(i)
    }

    /// The values, in column order.
    pub fn values(&self) -> &'a [Value] {
        self.values
    }

    /// The column names and wire types, in order.
    pub fn columns(&self) -> &'a [(String, ValueType)] {
        self.columns
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the row has no values (a query with no output columns).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The row as `T` through serde: a struct (or map) takes the values by column name, a
    /// tuple (or sequence) by position. See [`SelectResult::deserialize`].
    ///
    /// # Errors
    /// [`Error::RowValue`]: a field the row lacks (and is not an `Option`), a value of
    /// another type.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T> {
        de::row_as(self.columns, Some(self.values), None)
    }
}

/// What [`Row::get`] takes to find a column: its name (`&str`, `String`) or its position
/// from 0 (`usize`).
pub trait RowIndex {
    /// The column's position in `row`.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] when the row has no such column.
    fn index(&self, row: &Row<'_>) -> Result<usize>;
}

impl RowIndex for &str {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        row.columns
            .iter()
            .position(|(n, _)| n == self)
            .ok_or_else(|| no_such_column(self, row))
    }
}

impl RowIndex for String {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        self.as_str().index(row)
    }
}

impl RowIndex for &String {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        self.as_str().index(row)
    }
}

impl RowIndex for usize {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        if *self < row.values.len() {
            Ok(*self)
        } else {
            Err(no_such_column(&format!("#{self}"), row))
        }
    }
}

fn no_such_column(column: &str, row: &Row<'_>) -> Error {
    Error::NoSuchColumn {
        column: column.to_string(),
        columns: row.columns.iter().map(|(n, _)| n.clone()).collect(),
    }
}

impl SelectResult {
    /// The rows as [`Row`]s, for typed access by column name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Row<'_>> + '_ {
        self.rows
            .iter()
            .map(|values| Row::new(&self.columns, values))
    }

    /// Row `n` (from 0), `None` past the end.
    pub fn row(&self, n: usize) -> Option<Row<'_>> {
        self.rows
            .get(n)
            .map(|values| Row::new(&self.columns, values))
    }

    /// Every row as `T` through serde, in order: a struct (with `#[derive(Deserialize)]`)
    /// takes the values by column name (an `Option` field may lack its column; other columns
    /// are ignored unless the struct denies unknown fields), a tuple by position. Values map
    /// to Rust types as in [`FromValue`]; `any` values deserialize as their YSON document
    /// (maps, lists, scalars), so a column of YSON maps reads into a nested struct.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, SelectOptions};
    /// #[derive(serde::Deserialize, Debug, PartialEq)]
    /// struct User {
    ///     id: i64,
    ///     name: String,
    ///     email: Option<String>,
    /// }
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text(
    ///     "//users",
    ///     "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=name;type=utf8};{name=email;type=string}]}",
    /// )
    /// .await?;
    /// db.insert_json_rows("//users", &[serde_json::json!({"id": 1, "name": "Ann"})]).await?;
    /// let users: Vec<User> =
    ///     db.select_rows("* from [//users]", &SelectOptions::default()).await?.deserialize()?;
    /// assert_eq!(users, vec![User { id: 1, name: "Ann".into(), email: None }]);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::RowValue`] with the row's number and the column: a value of another type, a
    /// null for a field that is not an `Option`, a missing column.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        self.rows
            .iter()
            .enumerate()
            .map(|(n, values)| de::row_as(&self.columns, Some(values), Some(n)))
            .collect()
    }
}

impl LookupResult {
    /// The rows as [`Row`]s in request order; `None` for a key without a row (only with
    /// [`LookupOptions::keep_missing_rows`](crate::LookupOptions::keep_missing_rows)).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<Row<'_>>> + '_ {
        self.rows
            .iter()
            .map(|r| r.as_deref().map(|values| Row::new(&self.columns, values)))
    }

    /// Every row as `T` through serde (as [`SelectResult::deserialize`]). With
    /// `keep_missing_rows`, read into `Option<T>`: a key without a row gives `None`.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, LookupOptions};
    /// let db = Database::open("memory://")?;
    /// db.create_table_from_text(
    ///     "//t",
    ///     "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}",
    /// )
    /// .await?;
    /// db.insert_json_rows("//t", &[serde_json::json!({"k": 1, "v": "one"})]).await?;
    /// let keys = [dynql::yson::parse(b"{k=1}").unwrap(), dynql::yson::parse(b"{k=2}").unwrap()];
    /// let options = LookupOptions { keep_missing_rows: true, ..LookupOptions::default() };
    /// let found = db.lookup_rows("//t", &keys, &options).await?;
    /// let rows: Vec<Option<(i64, String)>> = found.deserialize()?;
    /// assert_eq!(rows, vec![Some((1, "one".to_string())), None]);
    /// # Ok::<(), dynql::Error>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`SelectResult::deserialize`]; a missing row read into a `T` that is not an
    /// `Option`.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        self.rows
            .iter()
            .enumerate()
            .map(|(n, values)| de::row_as(&self.columns, values.as_deref(), Some(n)))
            .collect()
    }
}
