//! Data files over HTTP: `POST /data_file` streams an upload into a blob, and a user's data
//! files are listed, read and deleted.

pub(crate) mod data_files;
