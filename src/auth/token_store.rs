//! [`TokenStore`]: the access tokens of a server, in one file (by default
//! `<data dir>/auth/tokens.json`, mode 0600) holding for each token its
//! id, name, scope and an argon2id hash of its secret — never the secret.
//!
//! A token is `hgt_<id>_<secret>`: a 16-hex-digit id (public: it names
//! the record, so a request costs one hash check, not one per token) and
//! 32 random bytes in base64url. `hourglass token create` prints it once.
//!
//! The server reads the file at start and again within a second of a
//! change (`hourglass token create|revoke` rewrite it while it runs): a
//! revoked token stops working without a restart. A verified token is
//! remembered in memory by the SHA-256 of what was presented, so that only
//! its first use pays for argon2 (a few milliseconds: see [`hasher`]); the
//! memory is cleared when the file changes. Hash checks run one at a time,
//! so guessing cannot take more than one core.
//!
//! ```text
//! {"version":1,"tokens":[{"id":"3f9a0c…","name":"grafana","scope":"read",
//!   "hash":"$argon2id$v=19$m=4096,t=1,p=1$<salt>$<hash>","created":1700000000}]}
//! ```

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::Scope;

/// The token file's format version.
const VERSION: u32 = 1;
/// How often a running server looks at the file for changes.
const RELOAD_EVERY: Duration = Duration::from_secs(1);
/// Verified tokens remembered at most (a server has a few).
const MAX_CACHED: usize = 4096;
const PREFIX: &str = "hgt_";

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("token file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("token file {path} is not readable: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error("no token named or numbered {0:?}")]
    NotFound(String),
    #[error("hashing a token: {0}")]
    Hash(String),
}

/// One token as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: String,
    pub name: String,
    pub scope: String,
    /// argon2id hash of the secret (PHC string).
    pub hash: String,
    /// Creation time, seconds since the epoch.
    pub created: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// A presented token that checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub id: String,
    pub name: String,
    pub scope: Scope,
}

/// The records as last read, and when the file was last looked at.
#[derive(Debug)]
struct Loaded {
    records: Vec<TokenRecord>,
    stamp: Option<Stamp>,
    checked: Instant,
}

/// The tokens a server accepts.
#[derive(Debug)]
pub struct TokenStore {
    path: PathBuf,
    loaded: Mutex<Loaded>,
    /// SHA-256 of a presented token → what it verified as.
    verified: Mutex<HashMap<[u8; 32], Verified>>,
    /// SHA-256 of presented tokens that failed a hash check since the file
    /// last changed: presented again, they cost nothing.
    failed: Mutex<HashSet<[u8; 32]>>,
    /// One hash check at a time (they take a core each), and how many
    /// wait for it: beyond [`MAX_WAITING`] a request is told to retry.
    hashing: tokio::sync::Semaphore,
    waiting: std::sync::atomic::AtomicUsize,
    /// How many times the file was read again (a connection that verified
    /// a token checks it again when this moves).
    generation: std::sync::atomic::AtomicU64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> AuthError + '_ {
    move |source| AuthError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What tells one version of the file from another: its inode (a
/// rewrite renames a new file over it), change and modification times in
/// nanoseconds, and length (`None`: no file).
type Stamp = (u64, u64, i64, i64, i64, i64, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.ctime(),
        m.ctime_nsec(),
        m.mtime(),
        m.mtime_nsec(),
        m.len(),
    ))
}

/// The largest token file read (a few hundred bytes a token).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// True for the argon2id hashes this store writes, with a cost a check can
/// afford (a hash naming 4 GiB would make every check allocate it).
fn hash_ok(hash: &str) -> bool {
    let Ok(h) = PasswordHash::new(hash) else {
        return false;
    };
    let param = |name: &str| h.params.get_decimal(name).unwrap_or(u32::MAX);
    h.algorithm.as_str() == "argon2id"
        && param("m") <= 65_536
        && param("t") <= 16
        && param("p") <= 4
}

fn read_file(path: &Path) -> Result<Vec<TokenRecord>, AuthError> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return Err(AuthError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("{} bytes, more than a token file holds", m.len()),
            });
        }
        _ => {}
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(path)(e)),
    };
    let file: TokenFile = serde_json::from_str(&text).map_err(|e| AuthError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if file.version != VERSION {
        return Err(AuthError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("unknown version {}", file.version),
        });
    }
    for r in &file.tokens {
        if Scope::parse(&r.scope).is_none() || !hash_ok(&r.hash) {
            return Err(AuthError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("token {:?} has a bad scope or hash", r.id),
            });
        }
    }
    Ok(file.tokens)
}

/// Replaces the file: a new file beside it, synced, renamed over it.
fn write_file(path: &Path, records: &[TokenRecord]) -> Result<(), AuthError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let body = serde_json::to_vec_pretty(&TokenFile {
        version: VERSION,
        tokens: records.to_vec(),
    })
    .map_err(|e| AuthError::Invalid(e.to_string()))?;
    // A new file of a name no one else knows (never an existing file or a
    // link planted there), mode 0600, owned as the file it replaces (a
    // `sudo hourglass token …` must not leave a file the server cannot
    // read).
    let suffix: String = random::<8>()?.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = path.with_extension(format!("json.{suffix}.tmp"));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&tmp).map_err(io(&tmp))?;
    if let Ok(old) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        if let Err(e) = std::os::unix::fs::fchown(&f, Some(old.uid()), Some(old.gid())) {
            tracing::warn!(error = %e, "the token file keeps its new owner: check the server can read it");
        }
    }
    f.write_all(&body).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// Runs `f` on the records under an exclusive lock of the file (two
/// `hourglass token` commands at once do not lose each other's change).
fn update<T>(
    path: &Path,
    f: impl FnOnce(&mut Vec<TokenRecord>) -> Result<T, AuthError>,
) -> Result<T, AuthError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::logfile::private_dir(dir).map_err(io(dir))?;
    let lock_path = path.with_extension("lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    lock.lock().map_err(io(&lock_path))?;
    let mut records = read_file(path)?;
    let out = f(&mut records)?;
    write_file(path, &records)?;
    Ok(out)
}

/// argon2id with a small cost: 4 MiB and one pass (a few milliseconds). A
/// token's secret is 256 random bits, so the hash's cost is not what keeps
/// a stolen file from giving tokens back (their entropy is); a larger one
/// would only add latency and memory to each first use.
fn hasher() -> Result<argon2::Argon2<'static>, AuthError> {
    let params =
        argon2::Params::new(4096, 1, 1, None).map_err(|e| AuthError::Hash(e.to_string()))?;
    Ok(argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        params,
    ))
}

fn random<const N: usize>() -> Result<[u8; N], AuthError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| AuthError::Hash(format!("no random source: {e}")))?;
    Ok(b)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `hgt_<id>_<secret>` split; `None` if it is not a token's shape.
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) && secret.len() == 43)
        .then_some((id, secret))
}

impl TokenStore {
    /// The token file of a configuration: `auth.tokens_file`, else
    /// `<data dir>/auth/tokens.json`.
    pub fn path_for(cfg: &crate::config::Config) -> PathBuf {
        if cfg.auth.tokens_file.as_os_str().is_empty() {
            cfg.storage.data_dir.join("auth").join("tokens.json")
        } else {
            cfg.auth.tokens_file.clone()
        }
    }

    /// The store of `path` (no file yet: no token).
    pub fn open(path: &Path) -> Result<TokenStore, AuthError> {
        Ok(TokenStore {
            path: path.to_path_buf(),
            loaded: Mutex::new(Loaded {
                records: read_file(path)?,
                stamp: stamp(path),
                checked: Instant::now(),
            }),
            verified: Mutex::new(HashMap::new()),
            failed: Mutex::new(HashSet::new()),
            hashing: tokio::sync::Semaphore::new(1),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            generation: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Adds a token named `name` (letters, digits, `.`, `_`, `-`; up to 64;
    /// unique) and returns its record and the token itself, which is not
    /// kept anywhere.
    pub fn create(
        path: &Path,
        name: &str,
        scope: Scope,
    ) -> Result<(TokenRecord, String), AuthError> {
        let name_ok = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !name_ok {
            return Err(AuthError::Invalid(format!(
                "invalid token name {name:?}: 1 to 64 letters, digits, '.', '_' or '-'"
            )));
        }
        let id: String = random::<8>()?.iter().map(|b| format!("{b:02x}")).collect();
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random::<32>()?);
        let salt =
            SaltString::encode_b64(&random::<16>()?).map_err(|e| AuthError::Hash(e.to_string()))?;
        let hash = hasher()?
            .hash_password(secret.as_bytes(), &salt)
            .map_err(|e| AuthError::Hash(e.to_string()))?
            .to_string();
        let record = TokenRecord {
            id: id.clone(),
            name: name.to_string(),
            scope: scope.as_str().to_string(),
            hash,
            created: now_secs(),
        };
        update(path, |records| {
            if records.iter().any(|r| r.name == name) {
                return Err(AuthError::Invalid(format!(
                    "a token named {name:?} exists (revoke it first)"
                )));
            }
            records.push(record.clone());
            Ok(())
        })?;
        Ok((record, format!("{PREFIX}{id}_{secret}")))
    }

    /// The tokens of `path`.
    pub fn list(path: &Path) -> Result<Vec<TokenRecord>, AuthError> {
        read_file(path)
    }

    /// Removes the token whose id or name is `which`; returns it.
    pub fn revoke(path: &Path, which: &str) -> Result<TokenRecord, AuthError> {
        update(path, |records| {
            let i = records
                .iter()
                .position(|r| r.id == which || r.name == which)
                .ok_or_else(|| AuthError::NotFound(which.to_string()))?;
            Ok(records.remove(i))
        })
    }

    /// Reads the file again if it changed (looked at once a second at
    /// most, by one caller at a time: the others go on with the tokens as
    /// they are). A changed file that cannot be read leaves no token
    /// accepted (a revocation must not be lost to a bad write) until it
    /// can be.
    fn refresh(&self) {
        let Ok(mut loaded) = self.loaded.try_lock() else {
            return;
        };
        if loaded.checked.elapsed() < RELOAD_EVERY {
            return;
        }
        loaded.checked = Instant::now();
        let now = stamp(&self.path);
        if now == loaded.stamp {
            return;
        }
        loaded.stamp = now;
        match read_file(&self.path) {
            Ok(records) => {
                loaded.records = records;
                tracing::info!(path = %self.path.display(), tokens = loaded.records.len(), "token file reloaded");
            }
            Err(e) => {
                loaded.records.clear();
                tracing::error!(error = %e, "token file changed and cannot be read: no token is accepted until it can be");
            }
        }
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        // Verified tokens whose record is still there, as it was, stay.
        let records = &loaded.records;
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|_, v| {
                records
                    .iter()
                    .any(|r| r.id == v.id && Scope::parse(&r.scope) == Some(v.scope))
            });
        self.failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// Moves each time the file is read again.
    pub fn generation(&self) -> u64 {
        self.refresh();
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `v` as the file now says (its scope may have changed); `None` if its
    /// token was revoked. For connections that keep a verified token.
    pub fn recheck(&self, v: &Verified) -> Option<Verified> {
        let loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let r = loaded.records.iter().find(|r| r.id == v.id)?;
        Some(Verified {
            id: r.id.clone(),
            name: r.name.clone(),
            scope: Scope::parse(&r.scope)?,
        })
    }

    fn digest(token: &str) -> [u8; 32] {
        sha2::Sha256::digest(token.as_bytes()).into()
    }

    /// What `token` verified as before, without a hash check: `None` if it
    /// was not verified since the file last changed.
    pub fn verify_cached(&self, token: &str) -> Option<Verified> {
        self.refresh();
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&Self::digest(token))
            .cloned()
    }

    /// What a hash check of `token` needs, if it may be a current token:
    /// its shape, a record of its id, not failed before. Cheap.
    fn pending(&self, token: &str) -> Option<Pending> {
        let (id, secret) = split(token)?;
        let digest = Self::digest(token);
        if self
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&digest)
        {
            return None;
        }
        let loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let record = loaded.records.iter().find(|r| r.id == id)?.clone();
        Some(Pending {
            digest,
            secret: secret.to_string(),
            record,
            generation: self.generation.load(std::sync::atomic::Ordering::Acquire),
        })
    }

    /// The hash check of a pending token (blocking: a few milliseconds);
    /// a success is remembered only if the file did not change meanwhile
    /// (a revocation read during the check wins).
    fn check(&self, p: Pending) -> Option<Verified> {
        let scope = Scope::parse(&p.record.scope)?;
        let ok = hash_ok(&p.record.hash)
            && PasswordHash::new(&p.record.hash).is_ok_and(|h| {
                argon2::Argon2::default()
                    .verify_password(p.secret.as_bytes(), &h)
                    .is_ok()
            });
        if !ok {
            let mut failed = self
                .failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if failed.len() >= MAX_CACHED {
                failed.clear();
            }
            failed.insert(p.digest);
            return None;
        }
        let v = Verified {
            id: p.record.id,
            name: p.record.name,
            scope,
        };
        let mut cache = self
            .verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.generation.load(std::sync::atomic::Ordering::Acquire) != p.generation {
            drop(cache);
            return self.recheck(&v);
        }
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(p.digest, v.clone());
        Some(v)
    }

    /// Checks `token` (blocking; for tools and tests): `None` if it is not
    /// a current token.
    pub fn verify(&self, token: &str) -> Option<Verified> {
        if let Some(v) = self.verify_cached(token) {
            return Some(v);
        }
        self.check(self.pending(token)?)
    }

    /// Checks `token` from async code: a token seen before costs a lookup,
    /// one of the wrong shape, an unknown id or a failed one before nothing
    /// more; a hash check runs on the blocking pool, one at a time, the
    /// same token's other requests waiting for its result. `Err(Busy)` when
    /// too many checks wait (the client should retry).
    pub async fn verify_async(self: &Arc<Self>, token: &str) -> Result<Option<Verified>, Busy> {
        use std::sync::atomic::Ordering;
        if let Some(v) = self.verify_cached(token) {
            return Ok(Some(v));
        }
        if self.pending(token).is_none() {
            return Ok(None);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy);
        }
        let permit = tokio::time::timeout(MAX_WAIT, self.hashing.acquire()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        let Ok(Ok(_permit)) = permit else {
            return Err(Busy);
        };
        // Another request may have checked the same token meanwhile.
        if let Some(v) = self.verify_cached(token) {
            return Ok(Some(v));
        }
        let Some(p) = self.pending(token) else {
            return Ok(None);
        };
        let store = Arc::clone(self);
        Ok(tokio::task::spawn_blocking(move || store.check(p))
            .await
            .ok()
            .flatten())
    }
}

/// What a hash check of a presented token needs.
struct Pending {
    digest: [u8; 32],
    secret: String,
    record: TokenRecord,
    /// The file's generation when the record was read.
    generation: u64,
}

/// Too many token checks wait: retry later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// Hash checks that may wait for the one running.
const MAX_WAITING: usize = 64;
/// How long one waits at most.
const MAX_WAIT: Duration = Duration::from_secs(2);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_until_revoked_and_only_hashes_are_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth").join("tokens.json");
        let (rec, token) = TokenStore::create(&path, "grafana", Scope::Read).unwrap();
        let (_, writer) = TokenStore::create(&path, "telegraf", Scope::Write).unwrap();
        assert!(token.starts_with("hgt_") && token.len() == 4 + 16 + 1 + 43);
        let text = std::fs::read_to_string(&path).unwrap();
        // `hgt_<id>_<secret>`: the secret's base64url may hold `_` too.
        let secret = &token[4 + 16 + 1..];
        assert!(!text.contains(secret), "the secret is not stored");
        assert!(text.contains("$argon2id$"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let store = TokenStore::open(&path).unwrap();
        let v = store.verify(&token).unwrap();
        assert_eq!((v.id.as_str(), v.scope), (rec.id.as_str(), Scope::Read));
        assert_eq!(store.verify_cached(&token), Some(v.clone()));
        assert_eq!(store.recheck(&v), Some(v.clone()));
        assert_eq!(store.verify(&writer).unwrap().scope, Scope::Write);
        // A wrong secret, a wrong id, a malformed token.
        let mut wrong = token.clone();
        let last = wrong.pop().unwrap();
        wrong.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(store.verify(&wrong), None);
        assert_eq!(
            store.verify(&token.replacen(&rec.id, "0000000000000000", 1)),
            None
        );
        assert_eq!(store.verify("hgt_x"), None);
        assert_eq!(store.verify(""), None);
        // Names are unique and checked.
        assert!(TokenStore::create(&path, "grafana", Scope::Read).is_err());
        assert!(TokenStore::create(&path, "no spaces", Scope::Read).is_err());
        // Revoked: gone from the file, and from a running store within a
        // second.
        let seen = store.generation();
        assert_eq!(TokenStore::revoke(&path, "grafana").unwrap().id, rec.id);
        assert!(matches!(
            TokenStore::revoke(&path, "grafana"),
            Err(AuthError::NotFound(_))
        ));
        assert_eq!(TokenStore::list(&path).unwrap().len(), 1);
        std::thread::sleep(RELOAD_EVERY + Duration::from_millis(50));
        assert_ne!(store.generation(), seen, "the change is noticed");
        assert_eq!(store.recheck(&v), None, "a kept token is revoked too");
        assert_eq!(store.verify(&token), None);
        assert_eq!(store.verify(&writer).unwrap().name, "telegraf");
    }

    #[test]
    fn costly_hashes_and_unreadable_changes_are_refused() {
        assert!(!hash_ok(
            "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"
        ));
        assert!(!hash_ok(
            "$argon2i$v=19$m=4096,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let (rec, token) = TokenStore::create(&path, "a", Scope::Admin).unwrap();
        assert!(hash_ok(&rec.hash));
        let store = TokenStore::open(&path).unwrap();
        assert!(store.verify(&token).is_some());
        // A wrong secret fails once, then costs nothing (remembered).
        let wrong = format!("hgt_{}_{}", rec.id, "B".repeat(43));
        assert_eq!(store.verify(&wrong), None);
        assert!(store.pending(&wrong).is_none());
        // A changed file that cannot be read: no token at all.
        std::fs::write(&path, "{ not json").unwrap();
        std::thread::sleep(RELOAD_EVERY + Duration::from_millis(50));
        assert_eq!(store.verify(&token), None);
    }

    #[test]
    fn a_damaged_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "{\"version\":1,\"tokens\":[{\"id\":\"x\"}]}").unwrap();
        assert!(matches!(
            TokenStore::open(&path),
            Err(AuthError::Corrupt { .. })
        ));
        std::fs::write(&path, "{\"version\":7,\"tokens\":[]}").unwrap();
        assert!(TokenStore::open(&path).is_err());
    }
}
