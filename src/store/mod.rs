//! The generation store (being written).
