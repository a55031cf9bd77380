//! Rows of either backend read into the store's typed structs. [`Columns`] is what a row
//! offers, written once for both backends; each struct's [`FromRow`] says which columns it
//! reads, by name, and what their values mean.

use sqlx::{ColumnIndex, Row};

use super::backend::Column;
use super::types::StoreError;

/// The columns of one row, by name and by type.
pub(super) trait Columns {
    fn text(&self, column: &str) -> Result<String, StoreError>;
    fn text_or_null(&self, column: &str) -> Result<Option<String>, StoreError>;
    fn integer(&self, column: &str) -> Result<i64, StoreError>;
    fn integer_or_null(&self, column: &str) -> Result<Option<i64>, StoreError>;
    fn real_or_null(&self, column: &str) -> Result<Option<f64>, StoreError>;
    fn flag(&self, column: &str) -> Result<bool, StoreError>;

    /// A count or a sum of bytes, which the store never makes negative (0 if it were).
    fn count(&self, column: &str) -> Result<u64, StoreError> {
        Ok(u64::try_from(self.integer(column)?).unwrap_or(0))
    }
}

impl<R> Columns for R
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Column<R::Database>,
    i64: Column<R::Database>,
    f64: Column<R::Database>,
    bool: Column<R::Database>,
{
    fn text(&self, column: &str) -> Result<String, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn text_or_null(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn integer(&self, column: &str) -> Result<i64, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn integer_or_null(&self, column: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn real_or_null(&self, column: &str) -> Result<Option<f64>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        Ok(self.try_get(column)?)
    }
}

/// A struct read from one row of the statement that selects its columns.
pub(super) trait FromRow: Sized {
    fn from_row(row: &impl Columns) -> Result<Self, StoreError>;
}

/// Every row of a result, read as `T`.
pub(super) fn all<T: FromRow, R: Columns>(rows: &[R]) -> Result<Vec<T>, StoreError> {
    rows.iter().map(T::from_row).collect()
}
