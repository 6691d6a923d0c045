interface Node {
  id: bigint
  /** The next node on each level this node is part of; level 0 links every node. */
  next: Array<Node | undefined>
}

// Each node is on the level above with probability 1/4: about 1.33 links a node, and a search
// visits O(log n) nodes whatever the order the ids came in.
const PROMOTION = 0.25
const MAX_LEVELS = 32

function randomHeight (): number {
  let height = 1
  while (height < MAX_LEVELS && Math.random() < PROMOTION) height++
  return height
}

/**
 * A set of ids in ascending order, as a skip list: add, delete and finding where a page starts all
 * take O(log n). A sorted array costs O(n) for every id added before the end.
 */
export class SortedIds {
  // A sentinel before the smallest id: its own id is never read.
  #head: Node = { id: 0n, next: [] }
  // The last node on each level (the head on a level left empty): an id above every other, the
  // common case of ids that grow, is appended after them without a search.
  #last: Node[] = []

  /** On each level, from the top, the last node whose id is less than `id`. */
  #before (id: bigint): Node[] {
    const before = new Array<Node>(this.#head.next.length)
    let node = this.#head
    for (let level = before.length - 1; level >= 0; level--) {
      for (let next = node.next[level]; next !== undefined && next.id < id; next = node.next[level]) node = next
      before[level] = node
    }
    return before
  }

  /** Adds an id that is not in the set. */
  add (id: bigint) {
    const largest = this.#last[0]
    const before = largest !== undefined && largest !== this.#head && largest.id < id ? this.#last : this.#before(id)
    const height = randomHeight()
    // Sized once: links grown from [] would reserve 17 slots a node, twice the heap an id takes.
    const node: Node = { id, next: new Array<Node | undefined>(height) }
    for (let level = 0; level < height; level++) {
      // A level above every other node's starts at the head.
      const previous = before[level] ?? this.#head
      node.next[level] = previous.next[level]
      previous.next[level] = node
      if (node.next[level] === undefined) this.#last[level] = node
    }
  }

  delete (id: bigint) {
    const before = this.#before(id)
    const node = before[0]?.next[0]
    if (node?.id !== id) return
    for (let level = 0; level < node.next.length; level++) {
      before[level].next[level] = node.next[level]
      if (node.next[level] === undefined) this.#last[level] = before[level]
    }
  }

  /** Up to `limit` ids greater than `after` (from the smallest when undefined), ascending. */
  page (after: bigint | undefined, limit: number): bigint[] {
    let node = after === undefined ? this.#head.next[0] : this.#before(after + 1n)[0]?.next[0]
    const ids: bigint[] = []
    for (; node !== undefined && ids.length < limit; node = node.next[0]) ids.push(node.id)
    return ids
  }

  clear () {
    this.#head = { id: 0n, next: [] }
    this.#last = []
  }
}
