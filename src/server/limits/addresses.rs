//! [`AddressLimits`]: connections per client address
//! (`server.max_connections_per_address`), so one host cannot take every
//! connection slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Open connections per client address.
#[derive(Debug)]
pub struct AddressLimits {
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's slot; released on drop.
#[derive(Debug)]
pub struct AddressSlot {
    addr: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.addr);
            }
        }
    }
}

impl AddressLimits {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            open: Arc::default(),
        }
    }

    /// A slot for a new connection from `addr`, or `None` if it holds its
    /// share already.
    pub fn admit(&self, addr: IpAddr) -> Option<AddressSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(addr).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            addr,
            open: Arc::clone(&self.open),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_cannot_take_every_slot() {
        let l = AddressLimits::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let s1 = l.admit(a).unwrap();
        let _s2 = l.admit(a).unwrap();
        assert!(l.admit(a).is_none());
        assert!(l.admit(b).is_some());
        drop(s1);
        assert!(l.admit(a).is_some());
    }
}
