//! (room `replay`; see ARCHITECTURE.md)
