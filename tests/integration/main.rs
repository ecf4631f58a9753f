//! Integration tests: the real `hourglass` binary on 127.0.0.1:0.

mod common;
mod damage;
mod durability;
mod hostile;
mod http_api;
mod protocols;
mod query;
mod robustness;
mod telnet;
mod timestamps;
