//! An intrusive doubly-linked list over block indices: push at either end, pop at the head and
//! remove from the middle, all O(1). Cached blocks are pushed at the tail, so popping from the
//! head evicts them in LRU order (which prefix caching relies on); blocks holding nothing worth
//! keeping are pushed at the head, to be reused first while their memory is still warm.

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct FreeList {
    prev: Vec<u32>,
    next: Vec<u32>,
    in_list: Vec<bool>,
    head: u32,
    tail: u32,
    len: usize,
}

impl FreeList {
    /// A list holding every index `0..capacity`, in order.
    pub fn full(capacity: usize) -> Self {
        let mut list = Self {
            prev: vec![NONE; capacity],
            next: vec![NONE; capacity],
            in_list: vec![false; capacity],
            head: NONE,
            tail: NONE,
            len: 0,
        };
        for index in 0..capacity as u32 {
            list.push_back(index);
        }
        list
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(feature = "testing")]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, index: u32) -> bool {
        self.in_list[index as usize]
    }

    /// Appends `index` as the most recently freed entry. It must not already be in the list.
    pub fn push_back(&mut self, index: u32) {
        debug_assert!(!self.contains(index), "block {index} freed twice");
        let i = index as usize;
        self.prev[i] = self.tail;
        self.next[i] = NONE;
        if self.tail == NONE {
            self.head = index;
        } else {
            self.next[self.tail as usize] = index;
        }
        self.tail = index;
        self.in_list[i] = true;
        self.len += 1;
    }

    /// Puts `index` first in line for reuse. It must not already be in the list.
    pub fn push_front(&mut self, index: u32) {
        debug_assert!(!self.contains(index), "block {index} freed twice");
        let i = index as usize;
        self.prev[i] = NONE;
        self.next[i] = self.head;
        if self.head == NONE {
            self.tail = index;
        } else {
            self.prev[self.head as usize] = index;
        }
        self.head = index;
        self.in_list[i] = true;
        self.len += 1;
    }

    /// Takes the entry at the head.
    pub fn pop_front(&mut self) -> Option<u32> {
        let head = self.head;
        if head == NONE {
            return None;
        }
        self.remove(head);
        Some(head)
    }

    /// Unlinks `index` from wherever it sits. Returns false if it was not in the list.
    pub fn remove(&mut self, index: u32) -> bool {
        let i = index as usize;
        if !self.in_list[i] {
            return false;
        }
        let (prev, next) = (self.prev[i], self.next[i]);
        if prev == NONE {
            self.head = next;
        } else {
            self.next[prev as usize] = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.prev[next as usize] = prev;
        }
        self.prev[i] = NONE;
        self.next[i] = NONE;
        self.in_list[i] = false;
        self.len -= 1;
        true
    }

    /// Entries from least to most recently freed.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.head != NONE).then_some(self.head), |&i| {
            let next = self.next[i as usize];
            (next != NONE).then_some(next)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_fifo_order_and_removes_from_the_middle() {
        let mut list = FreeList::full(5);
        assert_eq!(list.pop_front(), Some(0));
        assert!(list.remove(2));
        assert!(!list.remove(2));
        list.push_back(0);
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![1, 3, 4, 0]);
        assert_eq!(list.len(), 4);
        assert!(list.remove(0));
        assert!(list.remove(1));
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(list.pop_front(), Some(3));
        assert_eq!(list.pop_front(), Some(4));
        assert_eq!(list.pop_front(), None);
        assert!(list.is_empty());
        list.push_back(2);
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn push_front_is_popped_first_and_links_both_ways() {
        let mut list = FreeList::full(3);
        assert_eq!(list.pop_front(), Some(0));
        assert_eq!(list.pop_front(), Some(1));
        list.push_front(1);
        list.push_front(0);
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(list.remove(1));
        list.push_back(1);
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![0, 2, 1]);
        assert_eq!(list.pop_front(), Some(0));
        assert_eq!(list.pop_front(), Some(2));
        assert_eq!(list.pop_front(), Some(1));
        list.push_front(2);
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![2]);
        assert_eq!(list.pop_front(), Some(2));
        assert_eq!(list.pop_front(), None);
    }
}
