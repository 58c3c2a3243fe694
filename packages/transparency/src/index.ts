export { decodeBase64, encodeBase64 } from './base64.ts'
export {
  type Checkpoint,
  CheckpointError,
  formatCheckpoint,
  openCheckpoint,
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
  ed25519KeyId,
  formatVerifierKey,
  isValidKeyName,
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
