//! Write coalescing for one connection: what hyper writes to the socket during one poll of the
//! connection's task goes out in one `write`, when that poll ends, as grpc-go's writer does.
//!
//! h2 writes every DATA frame of more than 256 bytes with a `writev` of its own and flushes
//! after each one: a bundle answer (57 KB on average on the community catalog, sent as its
//! stored pieces) took 7.7 system calls, each a trip through the kernel's TCP stack (on
//! loopback, the client's receive path too); with this writer, 1.2. Here a flush asks for
//! nothing at once: the bytes wait in a buffer that [`Drain::poll_drain`] writes out after the
//! connection's poll returns, together with whatever else that poll produced (frames of other
//! streams, window updates). Nothing waits longer than that poll: the task that wrote them
//! writes them before it sleeps.
//!
//! Memory stays bounded: the buffer takes at most [`LIMIT`] bytes (about one bundle answer)
//! before writing applies back-pressure, a write of [`DIRECT`] bytes or more goes straight to
//! the socket (a large HTTP/1 body chunk is not copied, nor one a [`super::sendfile`] body
//! stands in for), and a drained buffer larger than
//! [`KEEP`] is freed, so an idle connection holds almost nothing.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// At most this many bytes wait in the buffer; a write beyond it first writes the buffer out.
/// The buffer is allocated at this size once it outgrows [`KEEP`], so it is never copied to
/// grow in small steps.
const LIMIT: usize = 64 * 1024;
/// A write of at least this many bytes bypasses the buffer (after writing it out).
const DIRECT: usize = 64 * 1024;
/// A drained buffer keeps its memory up to this capacity.
const KEEP: usize = 4 * 1024;

struct Shared<T> {
    io: T,
    buf: Vec<u8>,
    /// How much of `buf` has been written.
    sent: usize,
    /// A write error met while draining, returned to the next write or flush.
    failed: Option<io::Error>,
}

/// The connection's I/O as hyper sees it: reads go to the socket, writes to the buffer.
pub struct Coalesced<T>(Arc<Mutex<Shared<T>>>);

/// The other handle, for the connection's task: writes out what the poll buffered.
pub struct Drain<T>(Arc<Mutex<Shared<T>>>);

/// Wraps `io`: give the first handle to hyper, and call the second's
/// [`Drain::poll_drain`] after every poll of the connection.
pub fn coalesce<T>(io: T) -> (Coalesced<T>, Drain<T>) {
    let shared = Arc::new(Mutex::new(Shared {
        io,
        buf: Vec::new(),
        sent: 0,
        failed: None,
    }));
    (Coalesced(shared.clone()), Drain(shared))
}

impl<T: AsyncWrite + Unpin> Shared<T> {
    /// Writes the buffer out and flushes the layer below; `Pending` (the socket is full)
    /// leaves the rest for later.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.failed.take() {
            return Poll::Ready(Err(e));
        }
        while self.sent < self.buf.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.sent = 0;
        self.buf.clear();
        if self.buf.capacity() > KEEP {
            self.buf = Vec::new();
        }
        // What the layer below buffers itself (TLS records) goes out too.
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.failed.take() {
            return Poll::Ready(Err(e));
        }
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        // A file's bytes to be sent with sendfile are never copied (their memory is a
        // placeholder): they go to the socket's writer as they are.
        let direct = len >= DIRECT || bufs.iter().any(|b| super::sendfile::is_hole(b));
        if self.buf.len() + len > LIMIT || direct {
            ready!(self.poll_drain(cx))?;
        }
        if direct {
            return Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        }
        if self.buf.len() + len > self.buf.capacity() {
            let want = if self.buf.len() + len <= KEEP {
                KEEP
            } else {
                LIMIT
            };
            self.buf.reserve_exact(want - self.buf.len());
        }
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }
}

impl<T> Coalesced<T> {
    fn shared(&self) -> std::sync::MutexGuard<'_, Shared<T>> {
        // Both handles live on one task; a poisoned lock means a panic mid-write there, and
        // the buffer is as good as it was.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T: AsyncWrite + Unpin> Drain<T> {
    /// Writes out what the connection's last poll buffered. `Pending` registers the task to
    /// be woken when the socket takes more; an error is handed to the connection's next write.
    pub fn poll_drain(&self, cx: &mut Context<'_>) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Poll::Ready(Err(e)) = s.poll_drain(cx) {
            s.failed = Some(e);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.shared().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.shared().poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.shared().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Deferred to [`Drain::poll_drain`], except for an error already met.
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.shared().failed.take() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Ready(Ok(())),
        }
    }

    /// Everything buffered is written before the socket is shut down.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut s = self.shared();
        ready!(s.poll_drain(cx))?;
        Pin::new(&mut s.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Writes through the buffer reach the peer only when drained, in order, as one write.
    #[tokio::test]
    async fn buffered_writes_reach_the_peer_when_drained() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let (mut io, drain) = coalesce(a);
        io.write_all(b"one ").await.unwrap();
        io.flush().await.unwrap();
        io.write_all(b"two").await.unwrap();
        let mut got = [0u8; 16];
        let early = tokio::time::timeout(std::time::Duration::from_millis(20), b.read(&mut got));
        assert!(early.await.is_err(), "nothing is written before the drain");
        std::future::poll_fn(|cx| {
            drain.poll_drain(cx);
            Poll::Ready(())
        })
        .await;
        let n = b.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"one two");
    }

    /// A write error met while draining reaches the connection at its next write.
    #[tokio::test]
    async fn a_failed_drain_fails_the_next_write() {
        let (a, b) = tokio::io::duplex(1024);
        drop(b);
        let (mut io, drain) = coalesce(a);
        io.write_all(b"lost").await.unwrap();
        std::future::poll_fn(|cx| {
            drain.poll_drain(cx);
            Poll::Ready(())
        })
        .await;
        assert!(io.write_all(b"more").await.is_err());
    }

    /// A large write into an empty buffer goes straight through; the buffer never holds more
    /// than LIMIT; shutdown writes what is left.
    #[tokio::test]
    async fn large_writes_bypass_and_shutdown_drains() {
        let (a, mut b) = tokio::io::duplex(4 << 20);
        let (mut io, _drain) = coalesce(a);
        let big = vec![7u8; DIRECT];
        io.write_all(&big).await.unwrap();
        assert!(io.shared().buf.is_empty(), "a large write is not copied");
        let small = vec![1u8; 1000];
        for _ in 0..(LIMIT / 1000 + 10) {
            io.write_all(&small).await.unwrap();
            assert!(io.shared().buf.len() <= LIMIT);
        }
        io.shutdown().await.unwrap();
        let mut all = Vec::new();
        b.read_to_end(&mut all).await.unwrap();
        assert_eq!(all.len(), DIRECT + (LIMIT / 1000 + 10) * 1000);
        assert!(all[..DIRECT].iter().all(|&x| x == 7));
        assert!(all[DIRECT..].iter().all(|&x| x == 1));
    }
}
