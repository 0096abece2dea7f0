//! Precedent's compiled core: the text features of the lexical embedder
//! (`precedent.core.embedding.LexicalEmbedder`), computed exactly as its Python code computes
//! them, so that a vector does not depend on which one ran.
//!
//! A text's features, from its lower-case words (`[a-z0-9]+`, stopwords kept) and its concept
//! features (`~name`, computed in Python by the vocabulary):
//! - word features: the words without stopwords, then their bigrams (`"a b"`), then the
//!   concepts; each distinct feature once, in first-occurrence order, with its count;
//! - character n-grams of each word (stopwords out) padded as `<word>`, by length from `low`
//!   to `high`, then by position; each distinct n-gram once, in first-occurrence order over
//!   the words, with its count.
//! A feature's hash is the crc32 of its UTF-8 bytes.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use rustc_hash::{FxHashMap, FxHashSet};

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
        Counted { index: FxHashMap::default(), hashes: Vec::new(), counts: Vec::new() }
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
    list.iter().map(|item| Ok(item.cast_into::<PyString>()?)).collect()
}

/// The lexical embedder's text features for one setting of stopwords, n-gram lengths and
/// bigrams.
#[pyclass(frozen, module = "precedent_native")]
struct Featurizer {
    stopwords: FxHashSet<String>,
    low: usize,
    high: usize,
    bigrams: bool,
}

#[pymethods]
impl Featurizer {
    #[new]
    fn new(stopwords: Vec<String>, low: usize, high: usize, bigrams: bool) -> PyResult<Self> {
        if low < 1 || low > high {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "n-gram lengths must be (low, high) with 1 <= low <= high",
            ));
        }
        Ok(Featurizer { stopwords: stopwords.into_iter().collect(), low, high, bigrams })
    }

    /// `(word_hashes, word_counts, char_hashes, char_counts)`, each the bytes of native int64
    /// values, for a text whose lower-case words are `every` and whose concept features are
    /// `concepts`.
    fn features<'py>(
        &self,
        py: Python<'py>,
        every: &Bound<'py, PyList>,
        concepts: &Bound<'py, PyList>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)>
    {
        let every = strings(every)?;
        let concepts = strings(concepts)?;
        let mut words: Vec<&str> = Vec::with_capacity(every.len());
        for word in &every {
            let word = word.to_str()?;
            if !self.stopwords.contains(word) {
                words.push(word);
            }
        }
        let concepts: Vec<&str> = concepts.iter().map(|c| c.to_str()).collect::<PyResult<_>>()?;

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
        let mut word_hashes = single.hashes;
        word_hashes.extend(pairs.hashes);
        word_hashes.extend(named.hashes);
        let mut word_counts = single.counts;
        word_counts.extend(pairs.counts);
        word_counts.extend(named.counts);

        // Every word padded as `<word>`, one after the other in one buffer, so that each
        // n-gram is a slice of it.
        let mut padded: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(words.len());
        for word in &words {
            let start = padded.len();
            padded.push(b'<');
            padded.extend_from_slice(word.as_bytes());
            padded.push(b'>');
            spans.push((start, padded.len()));
        }
        let mut grams: Counted<&[u8]> = Counted::new();
        for (word, &(start, end)) in words.iter().zip(&spans) {
            let chars = &padded[start..end];
            if word.is_ascii() {
                let size = chars.len();
                for n in self.low..=self.high.min(size) {
                    for i in 0..=size - n {
                        let gram = &chars[i..i + n];
                        grams.add(gram, || crc32(&[gram]));
                    }
                }
            } else {
                // n-grams of characters, not bytes: cut at character boundaries.
                let text = std::str::from_utf8(chars).expect("a word is UTF-8");
                let mut bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
                bounds.push(text.len());
                let size = bounds.len() - 1;
                for n in self.low..=self.high.min(size) {
                    for i in 0..=size - n {
                        let gram = &chars[bounds[i]..bounds[i + n]];
                        grams.add(gram, || crc32(&[gram]));
                    }
                }
            }
        }
        Ok((
            as_bytes(py, &word_hashes),
            as_bytes(py, &word_counts),
            as_bytes(py, &grams.hashes),
            as_bytes(py, &grams.counts),
        ))
    }
}

#[pymodule]
fn precedent_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Featurizer>()?;
    Ok(())
}
