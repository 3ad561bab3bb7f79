//! (room `http`; see ARCHITECTURE.md)
