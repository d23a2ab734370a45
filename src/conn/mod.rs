//! The connection layer both ports use (the gRPC port in `server` and the HTTP port in
//! `http`): accepting TCP connections, TLS, serving each connection in its own task with
//! graceful shutdown, and gathering a connection's writes into one system call.
//!
//! | file | owns |
//! |---|---|
//! | [`accept`] | the accept loop: a task per connection, TLS, graceful shutdown, GOAWAY after a swap |
//! | [`coalesce`] | a connection's writes gathered while its task runs and sent as one when it yields |
//! | [`sendfile`] | an HTTP/1 body of a file's bytes sent from the page cache by `sendfile(2)` on plain TCP |
//! | [`tls`] | `--tls-cert`/`--tls-key` and the health probe's client TLS: rustls configurations, one-line errors naming the file |

pub mod accept;
mod coalesce;
pub mod sendfile;
pub mod tls;

pub use accept::{serve, Limits, Listen};
pub use sendfile::Sink;
