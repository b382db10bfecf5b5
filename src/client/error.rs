//! Typed errors of client construction.

use std::fmt;

/// Why a client could not be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientConfigError {
    /// A configuration field is out of its allowed range.
    InvalidField {
        /// The field's name, as in the config struct.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The bootstrap list is empty or names something other than brokers of one cluster.
    InvalidBootstrap {
        /// What is wrong with it.
        reason: String,
    },
}

impl ClientConfigError {
    pub(crate) fn field(field: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidField {
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ClientConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidField { field, reason } => write!(f, "invalid {field}: {reason}"),
            Self::InvalidBootstrap { reason } => write!(f, "invalid bootstrap brokers: {reason}"),
        }
    }
}

impl std::error::Error for ClientConfigError {}

/// Checks that a duration field is positive.
pub(crate) fn require_positive_ms(
    field: &'static str,
    value_ms: i64,
) -> Result<(), ClientConfigError> {
    if value_ms > 0 {
        Ok(())
    } else {
        Err(ClientConfigError::field(
            field,
            format!("must be > 0 ms, got {value_ms}"),
        ))
    }
}
