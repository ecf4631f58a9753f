//! A workload's hosts: each one's tags, fixed per host.

/// A host of the workload and its tags, in output order.
#[derive(Debug, Clone)]
pub struct HostDef {
    pub tags: Vec<(String, String)>,
}
