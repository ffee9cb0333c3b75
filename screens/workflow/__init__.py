"""The workflow host: guided operations in the dashboard. host.py runs them for the App, wizard.py shows one
run step by step, forms.py is the new-workflow form (and its palette commands), journals.py lists the journal
directory, model.py is what the wizard shows as plain data, rehearsal.py a rehearsal's report. It imports no
screen: the App hands the host the screen its runs are listed on."""
