-- Reserved for the token stream (issue 31), which another branch adds as its 0018: this
-- placeholder only keeps the numbers without a gap until both merge, and is dropped then.
SELECT 1;
