//! Test harness (being written).
