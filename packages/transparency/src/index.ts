// The portable build (browsers, and any host with WebCrypto); Node resolves to ./node.ts.
export { decodeBase64, encodeBase64 } from './base64.ts'
export {
  CanonicalJsonError,
  type CanonicalPart,
  canonicalJson,
  canonicalJsonValue,
  canonicalParts,
  type JsonValue,
  rememberCanonicalJson,
  rememberCanonicalParts,
} from './canonical-json.ts'
export {
  type Checkpoint,
  CheckpointError,
  formatCheckpoint,
  type OpenedCheckpoint,
  openCheckpoint,
  openCheckpointAsync,
  type ParsedCheckpoint,
  parseCheckpoint,
} from './checkpoint.ts'
export {
  appendLeaves,
  type CompactRange,
  compactRangeFromNodes,
  compactRangeRoot,
  EMPTY_COMPACT_RANGE,
  type StoredNode,
} from './compact-range.ts'
export {
  type JsonWebKeySet,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  type JwsCheck,
  JwsError,
  sha256Digest,
  type VerifiedEnvelope,
  type VerifiedJws,
  verifyCompactJws,
  verifyManifestEnvelope,
} from './jws.ts'
export {
  type Ed25519Jwk,
  type Ed25519Key,
  ed25519KeyId,
  formatVerifierKey,
  isValidKeyName,
  type KeyObjectLike,
  NoteError,
  type NoteErrorReason,
  type NoteSignature,
  type NoteSigner,
  type NoteVerifier,
  noteVerifier,
  parseVerifierKey,
  signNote,
  type VerifiedNote,
  verifyNote,
  verifyNoteAsync,
} from './note.ts'
export {
  bytesEqual,
  consistencyProof,
  inclusionProof,
  ProofError,
  rootFromInclusionProof,
  verifyConsistency,
  verifyInclusion,
} from './proof.ts'
export {
  consistencyProofNodes,
  hashOfNodes,
  inclusionProofNodes,
  type NodeHashes,
  type NodeId,
  nodeKey,
  nodesToFetch,
  type ProofPlan,
  perfectNodes,
  proofFromNodes,
  rootFromNodes,
  rootNodes,
} from './proof-nodes.ts'
export { emptyRoot, HASH_SIZE, leafHash, nodeHash, rootFromLeafHashes } from './rfc9162.ts'
