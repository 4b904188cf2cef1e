;;; eglot.el --- patchwise in Emacs + eglot, driven by tests/emacs.rs  -*- lexical-binding: t -*-

;; A generic LSP client, used as docs/editors.md tells an Emacs 28 + eglot 1.9 user to: an
;; instruction comment in the file, `M-x eglot-code-actions' → "Apply instruction", the echo
;; area says the proposal is ready, eldoc (hover) shows its diff, "Show diff" shows it as a
;; message, then `M-x eglot-code-actions' → "Accept"; the buffer must hold the edit.
;;
;; Every action goes through `eglot-code-actions' called as a command; only the user's answers
;; are scripted (the title picked in its prompt, "y" to any question eglot asks; the test
;; expects none).  Nothing waits for a fixed time: each step waits for what the user
;; would see, with a generous deadline.  The report is JSON in $PATCHWISE_OUT; every message
;; eglot sent the server, as the JSON it wrote, is one line of $PATCHWISE_TRAFFIC.

(require 'json)

(defvar pw-report (list (cons 'ok :json-false)))
(defvar pw-messages nil "Echo-area messages, newest first.")
(defvar pw-prompts nil "The questions the user was asked, newest first.")
(defvar pw-sent nil "The JSON text of every message sent to the server, newest first.")

(defvar pw-start (float-time))
(defvar pw-steps nil "Each step's name and seconds since the start, newest first.")

(defun pw-step (name)
  (push (format "%.2f %s" (- (float-time) pw-start) name) pw-steps))

(defun pw-set (key value)
  (setq pw-report (cons (cons key value) (assq-delete-all key pw-report))))

(defconst pw-patience 240
  "Seconds any one step may take.  Generous on purpose: the test checks behaviour, not speed,
and a loaded machine running it at low priority can take half a minute to start the server.")

(defun pw-wait (what predicate)
  "Processes the server's messages until PREDICATE holds; fails after `pw-patience' seconds."
  (let ((deadline (+ (float-time) pw-patience)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall predicate)
        (error "timed out after %ss waiting for %s; echo area: %S"
               pw-patience what (reverse pw-messages)))))

(defun pw-message-matching (regexp)
  (seq-find (lambda (m) (string-match-p regexp m)) pw-messages))

(defun pw-run-action (prefix)
  "Runs `M-x eglot-code-actions' at point and picks the action whose title starts with PREFIX.
Returns the titles that were offered."
  (let* (offered
         (completing-read-function
          (lambda (_prompt collection &rest _)
            (setq offered (mapcar (lambda (c) (if (consp c) (car c) c)) collection))
            (or (seq-find (lambda (title) (string-prefix-p prefix title)) offered)
                (error "no action titled %s… among %S" prefix offered))))
         ;; The last event is RET, as after `M-x eglot-code-actions RET': eglot 1.9 pops up a
         ;; mouse menu instead when the command was not started from the keyboard.
         (last-nonmenu-event 13))
    (call-interactively #'eglot-code-actions)
    offered))

(defun pw-hover ()
  "The text eldoc shows for point, from eglot's hover function."
  (let (shown)
    (eglot-hover-eldoc-function (lambda (doc &rest _) (setq shown (or doc ""))))
    (pw-wait "the hover" (lambda () shown))
    shown))

(defun pw-server-text ()
  "The server's copy of the buffer (`patchwise/viewFileText').  The request is deferred, so
eglot first sends the changes it still holds, as it does before any deferred request."
  (jsonrpc-request (eglot-current-server) :patchwise/viewFileText
                   (list :uri (eglot--path-to-uri buffer-file-name))
                   :deferred :patchwise/viewFileText))

(defun pw-buffer-text ()
  (buffer-substring-no-properties (point-min) (point-max)))

(defun pw-goto-change ()
  "Point on the line of the instruction comment, where the proposal's hunk starts."
  (goto-char (point-min))
  (search-forward "// patchwise:")
  (beginning-of-line)
  (forward-char 4))

(condition-case err
    (progn
      ;; Installed packages (Debian's elpa-eglot) are activated at startup under `-q'.
      (unless (require 'eglot nil t)
        (error "eglot is not installed: install the Debian package elpa-eglot (scripts/editor-test-deps does)"))
      (pw-set 'eglot_library (locate-library "eglot"))
      (advice-add 'jsonrpc--json-encode :filter-return
                  (lambda (json) (push json pw-sent) json))
      (advice-add 'message :before
                  (lambda (format &rest args)
                    (when format (push (apply #'format format args) pw-messages))))
      (advice-add 'y-or-n-p :override
                  (lambda (prompt) (push prompt pw-prompts) t))
      ;; The server is found for this buffer's mode, as a user configures it.
      (add-to-list 'eglot-server-programs
                   `(prog-mode . (,(getenv "PATCHWISE_BIN") "serve")))
      ;; eglot gives up on a connection after 30 s and jsonrpc on a request after 10 s by
      ;; default; here only the deadline above may fail a step.
      (setq eglot-sync-connect pw-patience
            eglot-connect-timeout pw-patience
            jsonrpc-default-request-timeout pw-patience)
      (find-file (getenv "PATCHWISE_FILE"))
      (prog-mode)
      (call-interactively #'eglot)
      (pw-wait "the server" (lambda () (eglot-current-server)))
      (pw-step "connected")
      (pw-set 'server (plist-get (eglot--server-info (eglot-current-server)) :name))
      (pw-set 'original (pw-buffer-text))

      ;; Apply instruction: the command answers at once, the proposal follows.
      (pw-goto-change)
      (pw-set 'actions (vconcat (pw-run-action "Apply instruction")))
      ;; The command has answered: the echo area already says that the run started.
      (pw-set 'started (or (pw-message-matching "working on") :null))
      (pw-wait "\"proposal … ready\" in the echo area"
               (lambda () (pw-message-matching "proposal [0-9]+ ready")))
      (pw-step "proposal ready")
      (pw-set 'ready (pw-message-matching "proposal [0-9]+ ready"))
      (pw-set 'diagnostics
              (vconcat (mapcar (lambda (d) (flymake-diagnostic-text d))
                               (flymake-diagnostics (line-beginning-position)
                                                    (line-end-position)))))

      ;; Review: eldoc's hover, then "Show diff" (as a message: eglot 1.9 cannot show a
      ;; document).
      (pw-goto-change)
      (pw-set 'hover (pw-hover))
      (pw-step "hover")
      (pw-set 'proposal_actions (vconcat (pw-run-action "Show diff")))
      (pw-wait "the diff in the echo area"
               (lambda () (pw-message-matching "\\`\\[eglot\\] Server reports[^\0]*\n@@ ")))
      (pw-step "diff shown")
      (pw-set 'diff_message (pw-message-matching "\\`\\[eglot\\] Server reports[^\0]*\n@@ "))

      ;; Accept: the action carries its edit; eglot would ask only before an edit the server
      ;; sends on its own (workspace/applyEdit).
      (pw-goto-change)
      (setq pw-prompts nil)
      (pw-run-action "Accept")
      (pw-wait "the edit in the buffer"
               (lambda () (not (equal (pw-buffer-text) (alist-get 'original pw-report)))))
      (pw-step "accepted")
      (pw-set 'buffer (pw-buffer-text))
      (pw-set 'modified (if (buffer-modified-p) t :json-false))
      (pw-set 'prompts (vconcat (reverse pw-prompts)))
      ;; eglot sends the applied edit back as didChange: the server's copy agrees.
      (pw-wait "the server's copy to equal the buffer"
               (lambda () (equal (pw-server-text) (pw-buffer-text))))
      (pw-step "server agrees")
      (pw-set 'server_text (pw-server-text))
      (pw-set 'ok t))
  (error
   (pw-set 'error (error-message-string err))
   (ignore-errors
     (with-current-buffer (jsonrpc-events-buffer (eglot-current-server))
       (pw-set 'events (buffer-substring-no-properties (point-min) (point-max)))))
   (when (buffer-file-name)
     (pw-set 'buffer (pw-buffer-text)))))

(pw-set 'messages (vconcat (reverse pw-messages)))
(ignore-errors (eglot-shutdown (eglot-current-server)))
(pw-step "shut down")
(pw-set 'steps (vconcat (reverse pw-steps)))
(with-temp-file (getenv "PATCHWISE_TRAFFIC")
  (dolist (json (reverse pw-sent))
    (insert json "\n")))
(with-temp-file (getenv "PATCHWISE_OUT")
  (insert (json-encode pw-report)))
(kill-emacs 0)

;;; eglot.el ends here
