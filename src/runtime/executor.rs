//! The tool executor (being written).
