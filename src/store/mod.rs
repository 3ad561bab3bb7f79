//! (room `store`; see ARCHITECTURE.md)
