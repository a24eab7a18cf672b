//! Property tests of the resolver (being written).
