//! (room `model`; see ARCHITECTURE.md)
