package batch

// QueueLen is the number of items in b's queue (taken out of it or not).
func QueueLen[T, R any](b *Batcher[T, R]) int { return len(b.queue) }
