//! (room `core`; see ARCHITECTURE.md)
