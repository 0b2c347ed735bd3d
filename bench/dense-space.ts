// Dense embeddings distributed like a production embedder's (bge-m3: 1024 dimensions, unit length), for
// measuring recall where the local embedder's sparse hashed vectors would flatter every index. How they
// are made: each vector is the normalized sum of
//   a common direction shared by every text   (weight² 0.35: unrelated texts sit at cosine ≈ 0.38, as
//                                              bge-m3's do, not at 0 as random vectors would),
//   one of 160 topics (a type × a word)        (weight² 0.25: same topic ≈ 0.60),
//   one of 3,200 subtopics (topic × a word)    (weight² 0.15: same subtopic ≈ 0.75),
//   its own Gaussian noise                     (weight² 0.25).
// A question is made the same way: the words it names pick its topic and subtopic, or it is a memory's
// own vector with more noise (a name asked for: cosine ≈ 0.86 to the memory). Every vector is
// reproducible from its key (the same seed, the same data on every run).
import { mulberry32 } from "../tests/seeded-random";

export const DIMENSIONS = 1024;
const COMMON = Math.sqrt(0.35);
const TOPIC = Math.sqrt(0.25);
const SUBTOPIC = Math.sqrt(0.15);
const NOISE = Math.sqrt(0.25);
const POOL = 1 << 21;

export class DenseSpace {
  readonly #common: Float32Array;
  readonly #topics: Float32Array[];
  readonly #subtopics: Float32Array[];
  /** Standard normal numbers; a vector's noise is a window of them at an offset its key picks. */
  readonly #pool: Float32Array;

  constructor(topics: number, subtopicsPerTopic: number, seed = 7) {
    const random = mulberry32(seed);
    this.#pool = new Float32Array(POOL);
    for (let i = 0; i < POOL; i += 2) {
      // Box–Muller: two independent standard normals from two uniforms.
      const r = Math.sqrt(-2 * Math.log(1 - random()));
      const angle = 2 * Math.PI * random();
      this.#pool[i] = r * Math.cos(angle);
      this.#pool[i + 1] = r * Math.sin(angle);
    }
    const direction = () => normalize(this.#window(Math.floor(random() * (POOL - DIMENSIONS))).slice());
    this.#common = direction();
    this.#topics = Array.from({ length: topics }, direction);
    this.#subtopics = Array.from({ length: topics * subtopicsPerTopic }, direction);
  }

  /** A text of `topic` and `subtopic` (an index over all topics' subtopics), its noise drawn from `key`. */
  vector(topic: number, subtopic: number, key: number, noise = NOISE): Float32Array {
    return this.#mix([
      [this.#common, COMMON],
      [this.#topics[topic]!, TOPIC],
      [this.#subtopics[subtopic]!, SUBTOPIC],
      [this.#noise(key), noise],
    ]);
  }

  /** A question about the text `of`: its vector with `noise` more of another draw (`key`). */
  near(of: Float32Array, key: number, noise: number): Float32Array {
    return this.#mix([
      [of, 1],
      [this.#noise(key), noise],
    ]);
  }

  /** A question naming no topic: the common direction and noise only. */
  vague(key: number): Float32Array {
    return this.#mix([
      [this.#common, COMMON],
      [this.#noise(key), Math.sqrt(1 - 0.35)],
    ]);
  }

  /** A unit direction of noise, the same for the same key. */
  #noise(key: number): Float32Array {
    const offset = Math.floor(mulberry32(key ^ 0x5bd1e995)() * (POOL - DIMENSIONS));
    return normalize(this.#window(offset).slice());
  }

  #window(offset: number): Float32Array {
    return this.#pool.subarray(offset, offset + DIMENSIONS);
  }

  #mix(parts: Array<[Float32Array, number]>): Float32Array {
    const out = new Float32Array(DIMENSIONS);
    for (const [v, weight] of parts) for (let d = 0; d < DIMENSIONS; d++) out[d]! += v[d]! * weight;
    return normalize(out);
  }
}

function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum) || 1;
  for (let d = 0; d < v.length; d++) v[d]! /= norm;
  return v;
}

/** pgvector's text form, five decimals (ample for a unit vector's 1024 components). */
export function vectorText(v: Float32Array): string {
  let out = "[";
  for (let d = 0; d < v.length; d++) out += (d ? "," : "") + (Math.round(v[d]! * 1e5) / 1e5).toString();
  return `${out}]`;
}
