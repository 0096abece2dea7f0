//! Precedent's compiled core: the text features of the lexical embedder
//! (`precedent.core.embedding.LexicalEmbedder`), computed exactly as its Python code computes
//! them, so that a vector does not depend on which one ran.
//!
//! A text's words: the runs of `[a-z0-9]` of its lower case, as `str.lower` makes it, with and
//! without stopwords (`Featurizer.words`). Its features, from its words without stopwords and
//! its concept features (`~name`, computed in Python by the vocabulary from the words):
//! - word features: the words without stopwords, then their bigrams (`"a b"`), then the
//!   concepts; each distinct feature once, in first-occurrence order, with its count;
//! - character n-grams of each word (stopwords out) padded as `<word>`, by length from `low`
//!   to `high`, then by position; each distinct n-gram once, in first-occurrence order over
//!   the words, with its count.
//!
//! A feature's hash is the crc32 of its UTF-8 bytes.
//!
//! And reading YAML over the events of unsafe-libyaml (a translation of the libyaml PyYAML
//! parses with): a stream's documents built in one pass, with the limits of
//! `precedent.adapters.bounded._scan_yaml` (depth, nodes reached through aliases) checked on
//! the way (`load_yaml`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use rustc_hash::{FxHashMap, FxHashSet};
use std::mem::MaybeUninit;
use unsafe_libyaml::{
    yaml_event_delete, yaml_event_t, yaml_parser_delete, yaml_parser_initialize, yaml_parser_parse,
    yaml_parser_set_input_string, yaml_parser_t, YAML_ALIAS_EVENT, YAML_MAPPING_END_EVENT,
    YAML_MAPPING_START_EVENT, YAML_PLAIN_SCALAR_STYLE, YAML_SCALAR_EVENT, YAML_SEQUENCE_END_EVENT,
    YAML_SEQUENCE_START_EVENT, YAML_STREAM_END_EVENT,
};

fn crc32(parts: &[&[u8]]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize()
}

/// Hashes and counts, in first-occurrence order of the keys.
struct Counted<K> {
    index: FxHashMap<K, usize>,
    hashes: Vec<i64>,
    counts: Vec<i64>,
}

impl<K: std::hash::Hash + Eq> Counted<K> {
    fn new() -> Self {
        Counted {
            index: FxHashMap::default(),
            hashes: Vec::new(),
            counts: Vec::new(),
        }
    }

    fn add(&mut self, key: K, hash: impl FnOnce() -> u32) {
        match self.index.get(&key) {
            Some(&at) => self.counts[at] += 1,
            None => {
                self.index.insert(key, self.hashes.len());
                self.hashes.push(i64::from(hash()));
                self.counts.push(1);
            }
        }
    }
}

fn as_bytes<'py>(py: Python<'py>, values: &[i64]) -> Bound<'py, PyBytes> {
    let mut raw = Vec::with_capacity(values.len() * 8);
    for value in values {
        raw.extend_from_slice(&value.to_ne_bytes());
    }
    PyBytes::new(py, &raw)
}

fn strings<'a>(list: &'a Bound<'_, PyList>) -> PyResult<Vec<Bound<'a, PyString>>> {
    list.iter()
        .map(|item| Ok(item.cast_into::<PyString>()?))
        .collect()
}

/// Words whose n-grams `Featurizer` keeps numbered, and distinct n-grams it numbers, unless
/// told otherwise; past either, a text with a word not kept is counted over its n-grams'
/// bytes (the same features).
const KEPT_WORDS: usize = 100_000;
const KEPT_GRAMS: usize = 500_000;

/// Each word's n-grams, numbered, with each number's hash: a word seen before costs one
/// lookup instead of hashing every n-gram again, and a text's n-grams are counted by number.
struct Grams {
    kept_words: usize,
    kept_grams: usize,
    numbers: FxHashMap<Box<[u8]>, u32>,
    hashes: Vec<i64>,
    /// Word → where its n-grams' numbers are in `ids`: (start, length).
    words: FxHashMap<Box<str>, (u32, u32)>,
    ids: Vec<u32>,
    /// For counting one text: the text's serial each number was last seen in, and where.
    seen: Vec<u32>,
    slot: Vec<u32>,
    serial: u32,
}

impl Grams {
    /// The numbers of `word`'s n-grams (`each_gram`), numbering new ones: where they are in
    /// `ids`; None when the tables are full.
    fn word(&mut self, word: &str, low: usize, high: usize) -> Option<(usize, usize)> {
        if let Some(&(start, size)) = self.words.get(word) {
            return Some((start as usize, size as usize));
        }
        if self.words.len() >= self.kept_words {
            return None;
        }
        let mut padded = Vec::with_capacity(word.len() + 2);
        pad_into(&mut padded, word);
        let mut ids: Vec<u32> = Vec::new();
        let mut full = false;
        let (numbers, hashes, kept) = (&mut self.numbers, &mut self.hashes, self.kept_grams);
        each_gram(&padded, low, high, &mut |gram: &[u8]| {
            if full {
                return;
            }
            let id = match numbers.get(gram) {
                Some(&id) => id,
                None if hashes.len() >= kept => {
                    full = true;
                    return;
                }
                None => {
                    let id = hashes.len() as u32;
                    numbers.insert(gram.into(), id);
                    hashes.push(i64::from(crc32(&[gram])));
                    id
                }
            };
            ids.push(id);
        });
        if full {
            return None;
        }
        self.seen.resize(self.hashes.len(), 0);
        self.slot.resize(self.hashes.len(), 0);
        let start = self.ids.len();
        self.ids.extend_from_slice(&ids);
        self.words
            .insert(word.into(), (start as u32, ids.len() as u32));
        Some((start, ids.len()))
    }
}

/// The lexical embedder's text features for one setting of stopwords, n-gram lengths and
/// bigrams.
#[pyclass(frozen, module = "precedent_native")]
struct Featurizer {
    stopwords: FxHashSet<String>,
    low: usize,
    high: usize,
    bigrams: bool,
    grams: std::sync::Mutex<Grams>,
}

impl Featurizer {
    /// A text's character n-grams counted by their numbers, in first-occurrence order:
    /// `(hashes, counts)`; None when a word's n-grams cannot be numbered (the tables full).
    fn numbered(&self, words: &[&str]) -> Option<(Vec<i64>, Vec<i64>)> {
        let mut guard = self.grams.lock().unwrap_or_else(|e| e.into_inner());
        let grams: &mut Grams = &mut guard;
        let (low, high) = (self.low, self.high);
        grams.serial = grams.serial.wrapping_add(1);
        if grams.serial == 0 {
            // Serials wrapped: forget every mark so that none is taken for this text's.
            grams.seen.iter_mut().for_each(|s| *s = 0);
            grams.serial = 1;
        }
        let mut hashes: Vec<i64> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        for word in words {
            let (start, size) = grams.word(word, low, high)?;
            let serial = grams.serial;
            for k in start..start + size {
                let at = grams.ids[k] as usize;
                if grams.seen[at] == serial {
                    counts[grams.slot[at] as usize] += 1;
                } else {
                    grams.seen[at] = serial;
                    grams.slot[at] = hashes.len() as u32;
                    hashes.push(grams.hashes[at]);
                    counts.push(1);
                }
            }
        }
        Some((hashes, counts))
    }

    /// `numbered` without the tables: each n-gram counted by its bytes, hashed once per text.
    fn counted(&self, words: &[&str]) -> (Vec<i64>, Vec<i64>) {
        // Every word padded as `<word>`, one after the other in one buffer, so that each
        // n-gram is a slice of it.
        let mut padded: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(words.len());
        for word in words {
            let start = padded.len();
            pad_into(&mut padded, word);
            spans.push((start, padded.len()));
        }
        let mut grams: Counted<&[u8]> = Counted::new();
        for &(start, end) in &spans {
            let chars = &padded[start..end];
            each_gram(chars, self.low, self.high, &mut |gram| {
                grams.add(gram, || crc32(&[gram]))
            });
        }
        (grams.hashes, grams.counts)
    }
}

/// `word` padded as `<word>`, appended to `buffer`: the form whose n-grams are counted.
fn pad_into(buffer: &mut Vec<u8>, word: &str) {
    buffer.push(b'<');
    buffer.extend_from_slice(word.as_bytes());
    buffer.push(b'>');
}

/// The n-grams of a word padded as `<word>`, by length from `low` to `high`, then by position;
/// of characters, not bytes, for a word that is not ASCII.
fn each_gram<'a>(padded: &'a [u8], low: usize, high: usize, out: &mut dyn FnMut(&'a [u8])) {
    if padded.is_ascii() {
        let size = padded.len();
        for n in low..=high.min(size) {
            for i in 0..=size - n {
                out(&padded[i..i + n]);
            }
        }
    } else {
        let text = std::str::from_utf8(padded).expect("a word is UTF-8");
        let mut bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
        bounds.push(text.len());
        let size = bounds.len() - 1;
        for n in low..=high.min(size) {
            for i in 0..=size - n {
                out(&padded[bounds[i]..bounds[i + n]]);
            }
        }
    }
}

#[pymethods]
impl Featurizer {
    #[new]
    #[pyo3(signature = (stopwords, low, high, bigrams, kept_words = KEPT_WORDS, kept_grams = KEPT_GRAMS))]
    fn new(
        stopwords: Vec<String>,
        low: usize,
        high: usize,
        bigrams: bool,
        kept_words: usize,
        kept_grams: usize,
    ) -> PyResult<Self> {
        if low < 1 || low > high {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "n-gram lengths must be (low, high) with 1 <= low <= high",
            ));
        }
        Ok(Featurizer {
            stopwords: stopwords.into_iter().collect(),
            low,
            high,
            bigrams,
            grams: std::sync::Mutex::new(Grams {
                kept_words,
                kept_grams,
                numbers: FxHashMap::default(),
                hashes: Vec::new(),
                words: FxHashMap::default(),
                ids: Vec::new(),
                seen: Vec::new(),
                slot: Vec::new(),
                serial: 0,
            }),
        })
    }

    /// From now on the n-gram tables may grow by `margin` words and `margin` n-grams at most
    /// (`LexicalEmbedder.settle`: the history is embedded; requests bring words that never
    /// come again).
    fn settle(&self, margin: usize) {
        let mut guard = self.grams.lock().unwrap_or_else(|e| e.into_inner());
        let grams: &mut Grams = &mut guard;
        grams.kept_words = grams
            .kept_words
            .min(grams.words.len().saturating_add(margin));
        grams.kept_grams = grams
            .kept_grams
            .min(grams.hashes.len().saturating_add(margin));
    }

    /// The words whose n-grams are kept numbered, and the n-grams numbered.
    fn tables(&self) -> (usize, usize) {
        let guard = self.grams.lock().unwrap_or_else(|e| e.into_inner());
        (guard.words.len(), guard.hashes.len())
    }

    /// The features of a text whose lower-case words without stopwords are `words` (the
    /// second list `words` gives) and whose concept features are `concepts`: `word_hashes`,
    /// `word_counts`, `char_hashes` and `char_counts` one after the other in one bytes object
    /// of native int64 values, and the lengths of the first three.
    fn features<'py>(
        &self,
        py: Python<'py>,
        words: &Bound<'py, PyList>,
        concepts: &Bound<'py, PyList>,
    ) -> PyResult<(Bound<'py, PyBytes>, (usize, usize, usize))> {
        let (words, concepts) = (strings(words)?, strings(concepts)?);
        let words: Vec<&str> = words.iter().map(|w| w.to_str()).collect::<PyResult<_>>()?;
        let concepts: Vec<&str> = concepts
            .iter()
            .map(|c| c.to_str())
            .collect::<PyResult<_>>()?;

        // Words, bigrams and concepts never share a key (a bigram holds a space, a concept
        // starts with `~`, a word holds neither), so each kind is counted on its own and the
        // three run one after the other: the order a single count over all three gives.
        let mut single: Counted<&str> = Counted::new();
        for word in &words {
            single.add(*word, || crc32(&[word.as_bytes()]));
        }
        let mut pairs: Counted<(&str, &str)> = Counted::new();
        if self.bigrams {
            for pair in words.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                pairs.add((a, b), || crc32(&[a.as_bytes(), b" ", b.as_bytes()]));
            }
        }
        let mut named: Counted<&str> = Counted::new();
        for concept in &concepts {
            named.add(*concept, || crc32(&[concept.as_bytes()]));
        }
        let (gram_hashes, gram_counts) = match self.numbered(&words) {
            Some(found) => found,
            None => self.counted(&words),
        };
        let word_features = single.hashes.len() + pairs.hashes.len() + named.hashes.len();
        let mut all = single.hashes;
        all.extend(pairs.hashes);
        all.extend(named.hashes);
        all.extend(single.counts);
        all.extend(pairs.counts);
        all.extend(named.counts);
        all.extend(&gram_hashes);
        all.extend(gram_counts);
        let sizes = (word_features, word_features, gram_hashes.len());
        Ok((as_bytes(py, &all), sizes))
    }

    /// A text's lower-case words as `re.findall("[a-z0-9]+", text.lower())` finds them, and
    /// the same words without stopwords (the same string objects).
    fn words<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let mut buffer = String::with_capacity(text.len());
        let mut spans: Vec<(usize, usize)> = Vec::new();
        lower_words(text, &mut buffer, &mut spans);
        let every: Vec<Bound<'py, PyString>> = spans
            .iter()
            .map(|&(start, end)| PyString::new(py, &buffer[start..end]))
            .collect();
        let kept: Vec<&Bound<'py, PyString>> = every
            .iter()
            .zip(&spans)
            .filter(|(_, &(start, end))| !self.stopwords.contains(&buffer[start..end]))
            .map(|(word, _)| word)
            .collect();
        Ok((PyList::new(py, &every)?, PyList::new(py, kept)?))
    }
}

/// The words of `text` lower-cased as Python's `str.lower` does, each a run of `[a-z0-9]`,
/// appended to `buffer`; each word's span in it into `spans`. A character is lower-cased on
/// its own (`str.lower` looks at the context only for a final capital sigma, which gives no
/// ASCII either way), and a character whose lower case is several characters (U+0130) gives
/// each of them in turn.
fn lower_words(text: &str, buffer: &mut String, spans: &mut Vec<(usize, usize)>) {
    let mut start: Option<usize> = None;
    let mut take = |lower: char, buffer: &mut String| {
        if lower.is_ascii_lowercase() || lower.is_ascii_digit() {
            if start.is_none() {
                start = Some(buffer.len());
            }
            buffer.push(lower);
        } else if let Some(at) = start.take() {
            spans.push((at, buffer.len()));
        }
    };
    if text.is_ascii() {
        for byte in text.bytes() {
            take(char::from(byte.to_ascii_lowercase()), buffer);
        }
    } else {
        for c in text.chars() {
            if c.is_ascii() {
                take(c.to_ascii_lowercase(), buffer);
            } else {
                for lower in c.to_lowercase() {
                    take(lower, buffer);
                }
            }
        }
    }
    take(' ', buffer);
}

const STR_TAG: &[u8] = b"tag:yaml.org,2002:str";
const SEQ_TAG: &[u8] = b"tag:yaml.org,2002:seq";
const MAP_TAG: &[u8] = b"tag:yaml.org,2002:map";

/// An open collection while a stream is loaded.
struct Open<'py> {
    /// The list or dict being filled.
    value: Bound<'py, PyAny>,
    /// A mapping's key waiting for its value (None: the next node is a key).
    key: Option<Bound<'py, PyAny>>,
    is_map: bool,
    /// Nodes inside so far, aliases expanded (as the scan counts them).
    count: u64,
    anchor: Option<Vec<u8>>,
}

/// What loading a stream ended with, short of its documents.
enum Stop {
    TooDeep(u64),
    TooManyAliased(u64),
    /// Not valid YAML, or something the plain path does not build (a merge key, a tag on a
    /// collection, an unhashable or recursive key, a scalar PyYAML refuses): Python loads it.
    Elsewhere,
    Failed,
}

unsafe fn bytes_of<'a>(pointer: *const u8) -> Option<&'a [u8]> {
    if pointer.is_null() {
        None
    } else {
        Some(std::ffi::CStr::from_ptr(pointer.cast()).to_bytes())
    }
}

/// Adds a finished node to the open collection (or as a document), as PyYAML's constructor
/// would: a mapping's key must be hashable and not a merge key.
fn place<'py>(
    open: &mut [Open<'py>],
    documents: &Bound<'py, PyList>,
    value: Bound<'py, PyAny>,
    plain_merge: bool,
) -> Result<(), Stop> {
    let Some(top) = open.last_mut() else {
        return documents.append(value).map_err(|_| Stop::Elsewhere);
    };
    if !top.is_map {
        return top.value.append_item(value);
    }
    match top.key.take() {
        None => {
            if plain_merge || value.is_instance_of::<PyList>() || value.is_instance_of::<PyDict>() {
                return Err(Stop::Elsewhere);
            }
            top.key = Some(value);
            Ok(())
        }
        Some(key) => top
            .value
            .cast::<PyDict>()
            .map_err(|_| Stop::Elsewhere)?
            .set_item(key, value)
            .map_err(|_| Stop::Elsewhere),
    }
}

trait AppendItem<'py> {
    fn append_item(&self, value: Bound<'py, PyAny>) -> Result<(), Stop>;
}

impl<'py> AppendItem<'py> for Bound<'py, PyAny> {
    fn append_item(&self, value: Bound<'py, PyAny>) -> Result<(), Stop> {
        self.cast::<PyList>()
            .map_err(|_| Stop::Elsewhere)?
            .append(value)
            .map_err(|_| Stop::Elsewhere)
    }
}

fn load<'py>(
    py: Python<'py>,
    text: &str,
    max_depth: usize,
    max_alias_nodes: u64,
    construct: &Bound<'py, PyAny>,
    implicit_first: &str,
) -> Result<Bound<'py, PyList>, Stop> {
    let documents = PyList::empty(py);
    let mut open: Vec<Open<'py>> = Vec::new();
    // Anchor → its object and its size in nodes (aliases expanded); None while it is open.
    let mut anchored: FxHashMap<Vec<u8>, Option<(Bound<'py, PyAny>, u64)>> = FxHashMap::default();
    let mut through_aliases: u64 = 0;
    unsafe {
        let mut parser = MaybeUninit::<yaml_parser_t>::uninit();
        let parser = parser.as_mut_ptr();
        if yaml_parser_initialize(parser).fail {
            return Err(Stop::Failed);
        }
        yaml_parser_set_input_string(parser, text.as_ptr(), text.len() as u64);
        let mut event = MaybeUninit::<yaml_event_t>::uninit();
        let event = event.as_mut_ptr();
        let outcome = loop {
            if yaml_parser_parse(parser, event).fail {
                break Err(Stop::Elsewhere);
            }
            let kind = (*event).type_;
            let line = (*event).start_mark.line;
            let step: Result<bool, Stop> = (|| {
                if kind == YAML_SEQUENCE_START_EVENT || kind == YAML_MAPPING_START_EVENT {
                    let is_map = kind == YAML_MAPPING_START_EVENT;
                    let (anchor, tag) = if is_map {
                        let data = (*event).data.mapping_start;
                        (bytes_of(data.anchor), bytes_of(data.tag))
                    } else {
                        let data = (*event).data.sequence_start;
                        (bytes_of(data.anchor), bytes_of(data.tag))
                    };
                    if open.len() >= max_depth {
                        return Err(Stop::TooDeep(line));
                    }
                    let default = if is_map { MAP_TAG } else { SEQ_TAG };
                    if !matches!(tag, None | Some(b"!")) && tag != Some(default) {
                        return Err(Stop::Elsewhere);
                    }
                    let value = if is_map {
                        PyDict::new(py).into_any()
                    } else {
                        PyList::empty(py).into_any()
                    };
                    let anchor = anchor.map(<[u8]>::to_vec);
                    if let Some(anchor) = &anchor {
                        anchored.insert(anchor.clone(), None);
                    }
                    open.push(Open {
                        value,
                        key: None,
                        is_map,
                        count: 0,
                        anchor,
                    });
                } else if kind == YAML_SEQUENCE_END_EVENT || kind == YAML_MAPPING_END_EVENT {
                    let done = open.pop().ok_or(Stop::Elsewhere)?;
                    if done.key.is_some() {
                        return Err(Stop::Elsewhere);
                    }
                    let size = done.count.saturating_add(1);
                    if let Some(anchor) = done.anchor {
                        anchored.insert(anchor, Some((done.value.clone(), size)));
                    }
                    if let Some(top) = open.last_mut() {
                        top.count = top.count.saturating_add(size);
                    }
                    place(&mut open, &documents, done.value, false)?;
                } else if kind == YAML_SCALAR_EVENT {
                    let data = (*event).data.scalar;
                    let value = std::slice::from_raw_parts(data.value, data.length as usize);
                    let value = std::str::from_utf8(value).map_err(|_| Stop::Elsewhere)?;
                    let tag = bytes_of(data.tag);
                    let plain = data.style == YAML_PLAIN_SCALAR_STYLE;
                    let built = match tag {
                        None | Some(b"!") => {
                            let resolvable = data.plain_implicit
                                && value
                                    .chars()
                                    .next()
                                    .is_none_or(|c| implicit_first.contains(c));
                            if resolvable {
                                construct
                                    .call1((
                                        py.None(),
                                        value,
                                        data.plain_implicit,
                                        data.quoted_implicit,
                                    ))
                                    .map_err(|_| Stop::Elsewhere)?
                            } else {
                                PyString::new(py, value).into_any()
                            }
                        }
                        Some(STR_TAG) => PyString::new(py, value).into_any(),
                        Some(tag) => {
                            let tag = std::str::from_utf8(tag).map_err(|_| Stop::Elsewhere)?;
                            construct
                                .call1((tag, value, data.plain_implicit, data.quoted_implicit))
                                .map_err(|_| Stop::Elsewhere)?
                        }
                    };
                    if let Some(anchor) = bytes_of(data.anchor) {
                        anchored.insert(anchor.to_vec(), Some((built.clone(), 1)));
                    }
                    if let Some(top) = open.last_mut() {
                        top.count = top.count.saturating_add(1);
                    }
                    let merge = plain && tag.is_none() && value == "<<";
                    place(&mut open, &documents, built, merge)?;
                } else if kind == YAML_ALIAS_EVENT {
                    let anchor = bytes_of((*event).data.alias.anchor).ok_or(Stop::Elsewhere)?;
                    let (value, size) = match anchored.get(anchor) {
                        Some(Some((value, size))) => (value.clone(), *size),
                        _ => return Err(Stop::Elsewhere), // undefined, or recursive
                    };
                    through_aliases = through_aliases.saturating_add(size);
                    if through_aliases > max_alias_nodes {
                        return Err(Stop::TooManyAliased(line));
                    }
                    if let Some(top) = open.last_mut() {
                        top.count = top.count.saturating_add(size);
                    }
                    place(&mut open, &documents, value, false)?;
                } else if kind == YAML_STREAM_END_EVENT {
                    return Ok(true);
                }
                Ok(false)
            })();
            yaml_event_delete(event);
            match step {
                Ok(true) => break Ok(()),
                Ok(false) => {}
                Err(stop) => break Err(stop),
            }
        };
        yaml_parser_delete(parser);
        outcome.map(|()| documents)
    }
}

/// Every document of a YAML stream as PyYAML's safe loader builds it, in one pass, within the
/// limits of `precedent.adapters.bounded._scan_yaml` (counted the same way): `("ok",
/// documents)`, `("depth" | "aliases", line)` (0-based), or `("elsewhere", None)` for a stream the Python loader must read (not valid YAML, a merge key,
/// a tag on a collection, a key that is a list or a mapping, a recursive alias, a scalar whose
/// construction failed). A plain scalar whose first character is in `implicit_first` (or that is
/// empty), and every scalar with a tag but `!` and `!!str`, is built by
/// `construct(tag or None, value, plain_implicit, quoted_implicit)`; every other one is a str.
#[pyfunction]
fn load_yaml<'py>(
    py: Python<'py>,
    text: &str,
    max_depth: usize,
    max_alias_nodes: u64,
    construct: &Bound<'py, PyAny>,
    implicit_first: &str,
) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    match load(
        py,
        text,
        max_depth,
        max_alias_nodes,
        construct,
        implicit_first,
    ) {
        Ok(documents) => Ok(("ok", documents.into_any())),
        Err(Stop::TooDeep(line)) => Ok(("depth", line.into_pyobject(py)?.into_any())),
        Err(Stop::TooManyAliased(line)) => Ok(("aliases", line.into_pyobject(py)?.into_any())),
        Err(Stop::Elsewhere) => Ok(("elsewhere", py.None().into_bound(py))),
        Err(Stop::Failed) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "the YAML parser could not be set up",
        )),
    }
}

#[pymodule]
fn precedent_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Featurizer>()?;
    module.add_function(wrap_pyfunction!(load_yaml, module)?)?;
    Ok(())
}
