-- Reserved for the case engine's schema changes (developed on another branch); intentionally empty here so the
-- numbering stays gapless.
SELECT 1;
