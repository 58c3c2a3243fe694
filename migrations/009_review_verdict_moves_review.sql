-- Every verdict gives its review a new row version (xmin), whichever version of Arbiter wrote it. A review's
-- first decision may be made without a transaction: it reads the review with its row version and its verdicts,
-- and writes the manifest only while the row is still at that version (docs/architecture.md, "Without a
-- transaction"). A verdict that lands in between must move the row, or the manifest would miss a verdict that
-- was accepted. Done here rather than in the code so that it also holds for verdicts written by replicas of an
-- earlier version while replicas are upgraded one by one. Creating the trigger locks review_verdicts until this
-- migration commits (a moment: nothing is rewritten).
CREATE FUNCTION review_verdict_moves_review() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE reviews SET status = status WHERE id = NEW.review_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER review_verdicts_move_review AFTER INSERT ON review_verdicts
  FOR EACH ROW EXECUTE FUNCTION review_verdict_moves_review();
