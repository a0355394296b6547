//! Why an index operation failed ([`IndexError`]).

use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{path}: {source}")]
    Vectors {
        path: PathBuf,
        #[source]
        source: crate::dense::vectors::VectorError,
    },
    /// `Index::stop` was called (a server shutting down): the update was
    /// abandoned before its commit, so the committed index is unchanged.
    #[error("stopped before the update was committed")]
    Stopped,
}

pub(super) fn vector_err(dir: &Path, err: crate::dense::vectors::VectorError) -> IndexError {
    IndexError::Vectors {
        path: dir.to_path_buf(),
        source: err,
    }
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}
