/**
 * The UTF-8 bytes of a text given in pieces, written piece by piece into one buffer. Joining megabyte pieces (a
 * stored manifest, its JWS) into one string first would copy each once more to flatten the joined string, and
 * allocate that string only to encode it and drop it; here each piece is encoded once, straight into place.
 */
export function utf8OfPieces(pieces: readonly string[]): Buffer {
  let length = 0
  for (const piece of pieces) length += Buffer.byteLength(piece, 'utf8')
  const bytes = Buffer.allocUnsafe(length)
  let offset = 0
  for (const piece of pieces) offset += bytes.write(piece, offset, 'utf8')
  return bytes
}
